//! Arrow column buffers built row by row: validity bitmaps (least significant bit first), 32-bit
//! offsets, fixed-width values, and the nested columns the log rows have (a map and a list of text).

#[derive(Default)]
pub struct Bits {
    pub bytes: Vec<u8>,
    pub len: usize,
    pub unset: usize,
}

impl Bits {
    pub fn push(&mut self, set: bool) {
        if self.len.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if set {
            *self.bytes.last_mut().unwrap() |= 1 << (self.len % 8);
        } else {
            self.unset += 1;
        }
        self.len += 1;
    }
}

/// Variable-width values (text or binary).
pub struct Var {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub valid: Bits,
}

impl Default for Var {
    fn default() -> Self {
        Var { offsets: vec![0], data: Vec::new(), valid: Bits::default() }
    }
}

impl Var {
    pub fn push(&mut self, value: Option<&[u8]>) {
        if let Some(v) = value {
            self.data.extend_from_slice(v);
        }
        self.offsets.push(self.data.len() as i32);
        self.valid.push(value.is_some());
    }

    pub fn text(&mut self, value: Option<&str>) {
        self.push(value.map(str::as_bytes));
    }
}

#[derive(Default)]
pub struct Fixed<T> {
    pub values: Vec<T>,
    pub valid: Bits,
}

impl<T: Default + Copy> Fixed<T> {
    pub fn push(&mut self, value: Option<T>) {
        self.values.push(value.unwrap_or_default());
        self.valid.push(value.is_some());
    }
}

/// `map<string, string>`: entries of text keys and text values.
pub struct Pairs {
    pub offsets: Vec<i32>,
    pub keys: Var,
    pub values: Var,
    pub valid: Bits,
}

impl Default for Pairs {
    fn default() -> Self {
        Pairs { offsets: vec![0], keys: Var::default(), values: Var::default(), valid: Bits::default() }
    }
}

impl Pairs {
    pub fn push(&mut self, entries: Option<&[(String, String)]>) {
        for (k, v) in entries.unwrap_or(&[]) {
            self.entry(k, v);
        }
        self.end_row(entries.is_some());
    }

    /// An entry of the row being built; `end_row` ends it.
    pub fn entry(&mut self, key: &str, value: &str) {
        self.keys.text(Some(key));
        self.values.text(Some(value));
    }

    pub fn end_row(&mut self, valid: bool) {
        self.offsets.push(self.keys.valid.len as i32);
        self.valid.push(valid);
    }
}

/// `list<string>`.
pub struct Items {
    pub offsets: Vec<i32>,
    pub items: Var,
    pub valid: Bits,
}

impl Default for Items {
    fn default() -> Self {
        Items { offsets: vec![0], items: Var::default(), valid: Bits::default() }
    }
}

impl Items {
    pub fn push(&mut self, items: Option<&[String]>) {
        for item in items.unwrap_or(&[]) {
            self.items.text(Some(item));
        }
        self.offsets.push(self.items.valid.len as i32);
        self.valid.push(items.is_some());
    }
}

//! JSON values as Python's `json` module reads and writes them, for a mirror's states and changes: read
//! as `json.loads` reads (an integer of any size stays exact, a number with a fraction or an exponent is
//! a float, `NaN` and the infinities are floats) and written as `spark.mirror.state.canonical` writes
//! (keys sorted, `,` and `:` without spaces, floats as `repr`, only `"`, `\` and controls escaped), so a
//! state written here equals, byte for byte, the state the reference writes.
//!
//!     value  = object | array | string | number | "true" | "false" | "null"
//!            | "NaN" | "Infinity" | "-Infinity"
//!     object = "{" ws ( "}" | string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws "}" )
//!     array  = "[" ws ( "]" | value ( ws "," ws value )* ws "]" )
//!     number = "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+-]? [0-9]+ )?
//!
//! A text this reader refuses (a lone surrogate, which Python would keep in a `str`) is `None`: the
//! caller leaves that change to the reference.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use crate::json;
use crate::json_text::Cursor;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer beyond 64 bits, as its decimal digits (what Python's `int` prints).
    BigInt(String),
    Float(f64),
    Str(String),
    Array(Vec<Value>),
    /// Keys in code point order, as `sort_keys` writes them; a repeated key keeps its last value.
    Object(BTreeMap<String, Value>),
}

impl Value {
    /// Python's truth of the value.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::BigInt(_) => true,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }
    }

    /// The same bytes once serialized by Cassandra: equal JSON, floats by their bits (0.0 and -0.0
    /// differ, NaN equals NaN).
    pub fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y)),
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|((k, x), (l, y))| k == l && x.same(y))
            }
            _ => self == other,
        }
    }

    pub fn canonical(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    pub fn write(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => json::int(out, *i),
            Value::BigInt(digits) => out.push_str(digits),
            Value::Float(f) => json::float(out, *f),
            Value::Str(s) => json::string(out, s),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Value::Object(members) => Value::write_object(out, members),
        }
    }

    pub fn write_object(out: &mut String, members: &BTreeMap<String, Value>) {
        out.push('{');
        for (i, (key, item)) in members.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json::string(out, key);
            out.push(':');
            item.write(out);
        }
        out.push('}');
    }
}

/// The value of a JSON text; None when `json.loads` would read it otherwise or not at all.
pub fn parse(text: &str) -> Option<Value> {
    let mut reader = Reader(Cursor { text: text.as_bytes(), at: 0 });
    reader.ws();
    let value = reader.value()?;
    reader.ws();
    (reader.at == reader.text.len()).then_some(value)
}

struct Reader<'a>(Cursor<'a>);

impl<'a> Deref for Reader<'a> {
    type Target = Cursor<'a>;

    fn deref(&self) -> &Cursor<'a> {
        &self.0
    }
}

impl DerefMut for Reader<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Reader<'_> {
    fn literal(&mut self, word: &str, value: Value) -> Option<Value> {
        self.word(word.as_bytes()).then_some(value)
    }

    fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'{' => {
                let mut members = BTreeMap::new();
                self.items(b'}', |reader| {
                    if reader.peek()? != b'"' {
                        return None;
                    }
                    let key = reader.string()?;
                    reader.ws();
                    if !reader.eat(b':') {
                        return None;
                    }
                    reader.ws();
                    members.insert(key, reader.value()?);
                    Some(())
                })?;
                Some(Value::Object(members))
            }
            b'[' => {
                let mut items = Vec::new();
                self.items(b']', |reader| {
                    items.push(reader.value()?);
                    Some(())
                })?;
                Some(Value::Array(items))
            }
            b'"' => self.string().map(Value::Str),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            b'N' => self.literal("NaN", Value::Float(f64::NAN)),
            b'I' => self.literal("Infinity", Value::Float(f64::INFINITY)),
            b'-' if self.text[self.at..].starts_with(b"-Infinity") => {
                self.literal("-Infinity", Value::Float(f64::NEG_INFINITY))
            }
            _ => self.number(),
        }
    }

    /// An object's members or an array's items (`item` reads one), from the opening bracket to `close`.
    fn items(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.at += 1;
        self.ws();
        if self.eat(close) {
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            if self.eat(close) {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        self.at += 1;
        let mut out = String::new();
        let mut start = self.at;
        loop {
            match self.peek()? {
                b'"' => {
                    out.push_str(std::str::from_utf8(&self.text[start..self.at]).ok()?);
                    self.at += 1;
                    return Some(out);
                }
                b'\\' => {
                    out.push_str(std::str::from_utf8(&self.text[start..self.at]).ok()?);
                    self.at += 1;
                    let escaped = self.peek()?;
                    self.at += 1;
                    match escaped {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.escaped_char()?),
                        _ => return None,
                    }
                    start = self.at;
                }
                0x00..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// The character of a `\uXXXX` escape (the `\u` read), a surrogate pair's two escapes as one; a lone
    /// surrogate is refused.
    fn escaped_char(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if !(0xD800..0xDC00).contains(&first) {
            return char::from_u32(first);
        }
        if !self.word(b"\\u") {
            return None;
        }
        let second = self.hex4()?;
        if !(0xDC00..0xE000).contains(&second) {
            return None;
        }
        char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let mut float = false;
        if self.peek() == Some(b'.') && self.text.get(self.at + 1).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
            self.digits();
            float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let mark = self.at;
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.digits();
                float = true;
            } else {
                self.at = mark; // as Python's scanner: the number ends before the `e`
            }
        }
        let text = std::str::from_utf8(&self.text[start..self.at]).ok()?;
        if float {
            return text.parse().ok().map(Value::Float);
        }
        Some(match text.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::BigInt(text.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, Value};

    fn round_trip(text: &str) -> String {
        parse(text).expect(text).canonical()
    }

    #[test]
    fn values_are_written_as_canonical_writes_them() {
        // Each right-hand side is `json.dumps(json.loads(left), ensure_ascii=False, separators=(",", ":"),
        // sort_keys=True)` in CPython 3.11.
        let cases = [
            (r#"{"b": 1, "a": [true, null, 2.50]}"#, r#"{"a":[true,null,2.5],"b":1}"#),
            ("[1e16, 1E-5, -0, -0.0, 12345678901234567890123]", "[1e+16,1e-05,0,-0.0,12345678901234567890123]"),
            (r#"["\u00e9\ud83d\ude00", "a\/b", "\u0001\n"]"#, "[\"é😀\",\"a/b\",\"\\u0001\\n\"]"),
            (r#"{"é": 1, "z": 2, "Z": 3}"#, r#"{"Z":3,"z":2,"é":1}"#),
            ("[NaN, Infinity, -Infinity]", "[NaN,Infinity,-Infinity]"),
            (r#"{"a": 1, "a": 2}"#, r#"{"a":2}"#),
        ];
        for (text, expected) in cases {
            assert_eq!(round_trip(text), expected, "{text}");
        }
    }

    #[test]
    fn what_python_reads_otherwise_is_refused() {
        for text in [r#""\ud800""#, r#""\udc00x""#, "[1,]", "01", "\"a\u{1}\"", "[1] x", "{1: 2}"] {
            assert_eq!(parse(text), None, "{text}");
        }
    }

    #[test]
    fn sameness_is_cassandra_s_bytes() {
        assert!(Value::Float(f64::NAN).same(&Value::Float(f64::NAN)));
        assert!(!Value::Float(0.0).same(&Value::Float(-0.0)));
        assert!(parse(r#"{"a": [1, "x"]}"#).unwrap().same(&parse(r#"{"a":[1,"x"]}"#).unwrap()));
        assert!(!Value::Int(1).same(&Value::Float(1.0)));
    }
}

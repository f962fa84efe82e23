//! Whether a text is JSON as Python's `json.loads` reads it, without building what it holds: the Kafka
//! sink checks every log row's text, which Spark assembles from value texts it does not read.
//!
//!     document = ws value ws
//!     value    = object | array | string | number | "true" | "false" | "null"
//!              | "NaN" | "Infinity" | "-Infinity"
//!     object   = "{" ws ( "}" | member ( ws "," ws member )* ws "}" )
//!     member   = string ws ":" ws value
//!     array    = "[" ws ( "]" | value ( ws "," ws value )* ws "]" )
//!     number   = "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+-]? [0-9]+ )?
//!     string   = '"' ( any byte but '"', '\' and 0x00–0x1f | escape )* '"'
//!     escape   = '\' ( '"' | '\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | 'u' hex hex hex hex )
//!     ws       = ( " " | "\t" | "\n" | "\r" )*
//!
//! Python's defaults, where they differ from RFC 8259: `NaN` and the infinities are numbers, and a
//! `\uXXXX` escape may be a lone surrogate. Nesting has no limit here (Python's recursion limit makes
//! `json.loads` raise `RecursionError` past about a thousand levels).

/// Whether `text` (UTF-8) is one JSON document as `json.loads` reads it.
pub fn is_json(text: &[u8]) -> bool {
    let mut reader = Cursor { text, at: 0 };
    reader.ws();
    if !reader.document() {
        return false;
    }
    reader.ws();
    reader.at == text.len()
}

/// A position in a JSON text, with the steps both readers take (this module's, which checks a text, and
/// `mirror::value`'s, which builds its value).
pub(crate) struct Cursor<'a> {
    pub text: &'a [u8],
    pub at: usize,
}

impl Cursor<'_> {
    pub fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    pub fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += found as usize;
        found
    }

    pub fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    pub fn word(&mut self, word: &[u8]) -> bool {
        let found = self.text[self.at..].starts_with(word);
        self.at += if found { word.len() } else { 0 };
        found
    }

    pub fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    /// One value and every container it opens, to the end of the outermost: the closing bracket each open
    /// container waits for is on a stack of its own, not the call stack.
    fn document(&mut self) -> bool {
        let mut open: Vec<u8> = Vec::new();
        loop {
            match self.peek() {
                Some(b'{') => {
                    self.at += 1;
                    self.ws();
                    if !self.eat(b'}') {
                        if !self.member() {
                            return false;
                        }
                        open.push(b'}');
                        continue;
                    }
                }
                Some(b'[') => {
                    self.at += 1;
                    self.ws();
                    if !self.eat(b']') {
                        open.push(b']');
                        continue;
                    }
                }
                _ => {
                    if !self.scalar() {
                        return false;
                    }
                }
            }
            // A value ended: close what it ends, or go on to the next member or item.
            loop {
                let Some(&close) = open.last() else { return true };
                self.ws();
                if self.eat(close) {
                    open.pop();
                    continue;
                }
                if !self.eat(b',') {
                    return false;
                }
                self.ws();
                if close == b'}' && !self.member() {
                    return false;
                }
                break;
            }
        }
    }

    /// A member's name, its colon and the whitespace up to its value.
    fn member(&mut self) -> bool {
        if self.peek() != Some(b'"') || !self.string() {
            return false;
        }
        self.ws();
        if !self.eat(b':') {
            return false;
        }
        self.ws();
        true
    }

    fn scalar(&mut self) -> bool {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            Some(b'N') => self.word(b"NaN"),
            Some(b'I') => self.word(b"Infinity"),
            Some(b'-') if self.text[self.at + 1..].starts_with(b"Infinity") => self.word(b"-Infinity"),
            _ => self.number(),
        }
    }

    /// A number as Python's scanner matches one: a fraction or exponent without digits is left unread,
    /// so what follows is not a number's end and the document fails there.
    fn number(&mut self) -> bool {
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return false,
        }
        if self.peek() == Some(b'.') && matches!(self.text.get(self.at + 1), Some(b'0'..=b'9')) {
            self.at += 1;
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let mut exponent = self.at + 1;
            if matches!(self.text.get(exponent), Some(b'+' | b'-')) {
                exponent += 1;
            }
            if matches!(self.text.get(exponent), Some(b'0'..=b'9')) {
                self.at = exponent;
                self.digits();
            }
        }
        true
    }

    fn string(&mut self) -> bool {
        self.at += 1; // the opening quote
        loop {
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    self.at += 1;
                    return true;
                }
                Some(b'\\') => match self.text.get(self.at + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.at += 2,
                    Some(b'u') => {
                        let hex = self.text.get(self.at + 2..self.at + 6);
                        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                            return false;
                        }
                        self.at += 6;
                    }
                    _ => return false,
                },
                Some(0x00..=0x1f) => return false,
                Some(_) => self.at += 1,
            }
        }
    }
}

//! Avro's binary encoding, the parts the events use: zig-zag varints, length-prefixed bytes,
//! little-endian floats, union branch indexes, and arrays and maps written as one block.

#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    #[inline]
    pub fn long(&mut self, v: i64) {
        let mut n = ((v << 1) ^ (v >> 63)) as u64;
        while n >= 0x80 {
            self.buf.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.buf.push(n as u8);
    }

    /// Avro ints share the long encoding.
    #[inline]
    pub fn int(&mut self, v: i64) {
        self.long(v)
    }

    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.long(b.len() as i64);
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub fn string(&mut self, s: &str) {
        self.bytes(s.as_bytes())
    }

    #[inline]
    pub fn boolean(&mut self, b: bool) {
        self.buf.push(b as u8);
    }

    /// The branch of a union.
    #[inline]
    pub fn branch(&mut self, index: i64) {
        self.long(index)
    }

    /// `["null", T]`: the null branch, or the other one, whose datum follows.
    #[inline]
    pub fn null_or(&mut self, present: bool) {
        self.buf.push(if present { 2 } else { 0 });
    }

    /// The start of an array or map of `count` items, written as one block.
    #[inline]
    pub fn block(&mut self, count: usize) {
        if count > 0 {
            self.long(count as i64);
        }
    }

    /// The end of an array or map.
    #[inline]
    pub fn end_blocks(&mut self) {
        self.buf.push(0);
    }

    #[inline]
    pub fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::Writer;

    fn written(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::default();
        f(&mut w);
        w.buf
    }

    #[test]
    fn longs_are_zig_zag_varints() {
        // The Avro specification's examples.
        assert_eq!(written(|w| w.long(0)), [0x00]);
        assert_eq!(written(|w| w.long(-1)), [0x01]);
        assert_eq!(written(|w| w.long(1)), [0x02]);
        assert_eq!(written(|w| w.long(-64)), [0x7f]);
        assert_eq!(written(|w| w.long(64)), [0x80, 0x01]);
        assert_eq!(written(|w| w.long(i64::MIN)), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    }

    #[test]
    fn strings_and_unions_and_blocks() {
        assert_eq!(written(|w| w.string("foo")), [0x06, b'f', b'o', b'o']);
        assert_eq!(written(|w| w.null_or(false)), [0x00]);
        assert_eq!(
            written(|w| {
                w.null_or(true);
                w.boolean(true)
            }),
            [0x02, 0x01]
        );
        // An empty array is its end marker alone; a non-empty one a count, the items, the end.
        assert_eq!(
            written(|w| {
                w.block(0);
                w.end_blocks()
            }),
            [0x00]
        );
        assert_eq!(
            written(|w| {
                w.block(2);
                w.int(1);
                w.int(2);
                w.end_blocks()
            }),
            [0x04, 0x02, 0x04, 0x00]
        );
    }
}

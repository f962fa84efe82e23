//! An Avro binary datum read by its writer schema into a tree borrowing the payload's bytes.
//! Errors are values carrying the byte position in the payload where reading stopped.

use crate::schema::{Node, NodeId, Schema};

#[derive(Debug, Clone, PartialEq)]
pub enum Datum<'a> {
    Null,
    Bool(bool),
    /// Avro int and long.
    Long(i64),
    Float(f32),
    Double(f64),
    Bytes(&'a [u8]),
    Str(&'a str),
    Array(Vec<Datum<'a>>),
    /// Entries in the writer's order; a key may repeat (the last one counts, as when read into a dict).
    Map(Vec<(&'a str, Datum<'a>)>),
    /// Fields in the schema's order.
    Record(Vec<Datum<'a>>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatumError {
    pub position: usize,
    pub message: String,
}

pub struct Input<'a> {
    bytes: &'a [u8],
    pub pos: usize,
}

impl<'a> Input<'a> {
    pub fn new(bytes: &'a [u8], pos: usize) -> Self {
        Input { bytes, pos }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn error<T>(&self, at: usize, message: impl Into<String>) -> Result<T, DatumError> {
        Err(DatumError { position: at, message: message.into() })
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DatumError> {
        if n > self.remaining() {
            return self
                .error(self.pos, format!("{what} of {n} bytes overruns the payload ({} left)", self.remaining()));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A zig-zag varint. Bytes beyond the tenth still count, their shift taken modulo 64, as the
    /// reference reader (fastavro) reads them.
    pub fn long(&mut self) -> Result<i64, DatumError> {
        let start = self.pos;
        let mut n: u64 = 0;
        let mut shift: u32 = 0;
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                return self.error(start, "a varint overruns the payload");
            };
            self.pos += 1;
            n |= ((b & 0x7f) as u64).wrapping_shl(shift);
            shift = shift.wrapping_add(7);
            if b & 0x80 == 0 {
                return Ok((n >> 1) as i64 ^ -((n & 1) as i64));
            }
        }
    }

    fn length(&mut self, what: &str) -> Result<usize, DatumError> {
        let start = self.pos;
        let n = self.long()?;
        if n < 0 {
            return self.error(start, format!("{what} of negative length {n}"));
        }
        Ok(n as usize)
    }

    /// The item count of the next block of an array or map; 0 at its end.
    fn block(&mut self, item_size: usize) -> Result<usize, DatumError> {
        let start = self.pos;
        let mut count = self.long()?;
        if count < 0 {
            count = count
                .checked_neg()
                .ok_or(DatumError { position: start, message: "a block count out of range".into() })?;
            self.long()?; // the block's size in bytes, which a reader reading every item does not need
        }
        let count = count as u64;
        if item_size > 0 && count > (self.remaining() / item_size) as u64 {
            return self.error(
                start,
                format!("a block of {count} items overruns the payload ({} bytes left)", self.remaining()),
            );
        }
        Ok(count as usize)
    }

    pub fn read(&mut self, schema: &Schema, id: NodeId) -> Result<Datum<'a>, DatumError> {
        Ok(match schema.node(id) {
            Node::Null => Datum::Null,
            // Any byte but 0 is true, as the reference reader (fastavro) reads it.
            Node::Boolean => Datum::Bool(self.take(1, "a boolean")?[0] != 0),
            // An int is read as a long, its range unchecked, as the reference reader (fastavro) does.
            Node::Int | Node::Long => Datum::Long(self.long()?),
            Node::Float => Datum::Float(f32::from_le_bytes(self.take(4, "a float")?.try_into().unwrap())),
            Node::Double => Datum::Double(f64::from_le_bytes(self.take(8, "a double")?.try_into().unwrap())),
            Node::Bytes => {
                let n = self.length("bytes")?;
                Datum::Bytes(self.take(n, "bytes")?)
            }
            Node::String => Datum::Str(self.text()?),
            Node::Array(items) => {
                let size = schema.min_size(*items);
                Datum::Array(self.blocks(size, |input| input.read(schema, *items))?)
            }
            Node::Map(values) => {
                let size = 1 + schema.min_size(*values);
                Datum::Map(self.blocks(size, |input| Ok((input.text()?, input.read(schema, *values)?)))?)
            }
            Node::Record(record) => {
                let mut out = Vec::with_capacity(record.fields.len());
                for field in &record.fields {
                    out.push(self.read(schema, field.node)?);
                }
                Datum::Record(out)
            }
            Node::Union(branches) => {
                let at = self.pos;
                let index = self.long()?;
                // A negative index counts from the end, as the reference reader indexes a Python list.
                let place = if index < 0 { branches.len() as i64 + index } else { index };
                match usize::try_from(place).ok().and_then(|i| branches.get(i)) {
                    Some(branch) => self.read(schema, *branch)?,
                    None => return self.error(at, format!("union branch {index} of {}", branches.len())),
                }
            }
        })
    }

    fn text(&mut self) -> Result<&'a str, DatumError> {
        let at = self.pos;
        let n = self.length("a string")?;
        let raw = self.take(n, "a string")?;
        std::str::from_utf8(raw)
            .map_err(|e| DatumError { position: at, message: format!("a string that is not UTF-8: {e}") })
    }

    /// The items of an array or map, block by block, each read by `item`.
    fn blocks<T>(
        &mut self,
        item_size: usize,
        mut item: impl FnMut(&mut Self) -> Result<T, DatumError>,
    ) -> Result<Vec<T>, DatumError> {
        let mut out = Vec::new();
        loop {
            let count = self.block(item_size)?;
            if count == 0 {
                return Ok(out);
            }
            out.reserve(count);
            for _ in 0..count {
                out.push(item(self)?);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Input;

    #[test]
    fn zig_zag_varints_as_fastavro_reads_them() {
        let bytes = [0x00, 0x01, 0x02, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let mut input = Input::new(&bytes, 0);
        let read: Vec<i64> = (0..5).map(|_| input.long().unwrap()).collect();
        assert_eq!(read, [0, -1, 1, 64, i64::MIN]);
        assert_eq!(input.remaining(), 0);
    }

    #[test]
    fn a_varint_that_overruns_the_payload_names_where_it_began() {
        let mut input = Input::new(&[0x02, 0x80, 0x80], 0);
        assert_eq!(input.long().unwrap(), 1);
        let error = input.long().unwrap_err();
        assert_eq!(error.position, 1);
        assert!(error.message.contains("overruns"), "{}", error.message);
    }
}

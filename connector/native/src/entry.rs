//! Log entries inside a sync section (CommitLog.add).
//!
//!     int32 size | uint32 CRC32(size) | size bytes mutation | uint32 CRC32(size, mutation)
//!
//! The second CRC continues the first one.

use crate::bytes::{be_i32, be_u32};
use crate::error::{Error, Kind, Result, UntilError};

/// Cassandra rejects anything smaller as garbage.
pub const MIN_MUTATION_SIZE: i32 = 10;

/// The entries of the section `content[start - base .. end - base]` (logical positions), from
/// `start`, lazily: (logical offset, mutation bytes), an error ending them.
pub struct Entries<'a> {
    content: &'a [u8],
    base: usize,
    i: usize,
    length: usize,
    /// A zero size marked the end of the segment: nothing after it is data.
    pub end_of_segment: bool,
}

pub fn entries(content: &[u8], base: usize, start: usize, end: usize) -> UntilError<Entries<'_>> {
    UntilError::new(Entries { content, base, i: start - base, length: end - base, end_of_segment: false })
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<(usize, &'a [u8])>;

    /// The next entry; None at the section's end or a zero size, which stay its end.
    fn next(&mut self) -> Option<Self::Item> {
        let (content, i, length) = (self.content, self.i, self.length);
        if i + 4 > length {
            return None;
        }
        let offset = (self.base + i) as u64;
        if i + 8 > length {
            return Some(Err(Error::new(Kind::Corrupt, offset, "entry header overruns its sync section")));
        }
        let size = be_i32(content, i).expect("in bounds");
        let size_crc = be_u32(content, i + 4).expect("in bounds");
        if size == 0 {
            self.end_of_segment = true;
            return None;
        }
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&content[i..i + 4]);
        if hasher.clone().finalize() != size_crc {
            return Some(Err(Error::new(Kind::Crc, offset, "entry size CRC mismatch")));
        }
        if size < MIN_MUTATION_SIZE || i + 8 + size as usize + 4 > length {
            return Some(Err(Error::new(Kind::Corrupt, offset, format!("invalid entry size {size}"))));
        }
        let mutation_end = i + 8 + size as usize;
        let mutation = &content[i + 8..mutation_end];
        hasher.update(mutation);
        if hasher.finalize() != be_u32(content, mutation_end).expect("in bounds") {
            return Some(Err(Error::new(Kind::Crc, offset, "mutation CRC mismatch")));
        }
        self.i = mutation_end + 4;
        Some(Ok((self.base + i, mutation)))
    }
}

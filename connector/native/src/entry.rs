//! Log entries inside a sync section (CommitLog.add).
//!
//!     int32 size | uint32 CRC32(size) | size bytes mutation | uint32 CRC32(size, mutation)
//!
//! The second CRC continues the first one.

use crate::bytes::{be_i32, be_u32};
use crate::error::{Error, Kind, Result};

/// Cassandra rejects anything smaller as garbage.
pub const MIN_MUTATION_SIZE: i32 = 10;

/// What reading a section's entries found.
pub struct Entries<'a> {
    /// (logical offset, mutation bytes) of each entry.
    pub entries: Vec<(usize, &'a [u8])>,
    /// A zero size marked the end of the segment: nothing after it is data.
    pub end_of_segment: bool,
}

/// Entries of the section `content[start - base .. end - base]` (logical positions), from `start`.
pub fn entries(content: &[u8], base: usize, start: usize, end: usize) -> Result<Entries<'_>> {
    let mut found = Vec::new();
    let mut i = start - base;
    let length = end - base;
    while i + 4 <= length {
        let offset = (base + i) as u64;
        if i + 8 > length {
            return Err(Error::new(Kind::Corrupt, offset, "entry header overruns its sync section"));
        }
        let size = be_i32(content, i).expect("in bounds");
        let size_crc = be_u32(content, i + 4).expect("in bounds");
        if size == 0 {
            return Ok(Entries { entries: found, end_of_segment: true });
        }
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&content[i..i + 4]);
        if hasher.clone().finalize() != size_crc {
            return Err(Error::new(Kind::Crc, offset, "entry size CRC mismatch"));
        }
        if size < MIN_MUTATION_SIZE || i + 8 + size as usize + 4 > length {
            return Err(Error::new(Kind::Corrupt, offset, format!("invalid entry size {size}")));
        }
        let mutation_end = i + 8 + size as usize;
        let mutation = &content[i + 8..mutation_end];
        hasher.update(mutation);
        if hasher.finalize() != be_u32(content, mutation_end).expect("in bounds") {
            return Err(Error::new(Kind::Crc, offset, "mutation CRC mismatch"));
        }
        found.push((base + i, mutation));
        i = mutation_end + 4;
    }
    Ok(Entries { entries: found, end_of_segment: false })
}

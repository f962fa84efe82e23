//! One segment file, mapped read-only: its descriptor, its sections and their entries.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::compression::Codec;
use crate::descriptor::{read_descriptor, segment_id_from_name, Descriptor};
use crate::entry::entries;
use crate::error::{Error, Kind, Result};
use crate::sync::{codec_of, sections, Section};

pub struct Segment {
    map: Mmap,
    pub descriptor: Descriptor,
    codec: Option<Codec>,
}

/// The entries read by one pass over a segment.
pub struct Read {
    /// (logical offset, mutation bytes).
    pub entries: Vec<(usize, Vec<u8>)>,
    /// Logical end of the last section read completely (a marker slot, where no entry starts).
    pub end: usize,
    /// A zero entry size ended the segment.
    pub end_of_segment: bool,
}

impl Segment {
    pub fn open(path: &Path) -> std::io::Result<Result<Segment>> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(Err(Error::new(Kind::Truncated, 0, "empty file")));
        }
        // SAFETY: Cassandra only appends to a segment and never truncates it while it is linked in
        // cdc_raw; the map is read-only.
        let map = unsafe { Mmap::map(&file)? };
        let named_id = path.file_name().and_then(|n| n.to_str()).and_then(segment_id_from_name);
        Ok(read_descriptor(&map, named_id).and_then(|descriptor| {
            let codec = codec_of(&descriptor)?;
            Ok(Segment { map, descriptor, codec })
        }))
    }

    /// Bytes mapped; a compressed live segment that grew must be reopened.
    pub fn size(&self) -> usize {
        self.map.len()
    }

    pub fn sections(&self, limit: Option<usize>) -> Result<Vec<Section>> {
        sections(&self.map, &self.descriptor, limit)
    }

    /// Entries of the sections up to `limit`, those at or after logical position `start`.
    pub fn read(&self, limit: Option<usize>, start: Option<usize>) -> Result<Read> {
        let mut read = Read { entries: Vec::new(), end: self.descriptor.header_length, end_of_segment: false };
        for section in self.sections(limit)? {
            if start.is_none_or(|s| section.end > s) {
                let from = match start {
                    Some(s) if section.start <= s => s,
                    _ => section.start,
                };
                let (content, base) = section.load(&self.map, self.codec)?;
                let found = entries(&content, base, from, section.end)?;
                read.entries.extend(found.entries.into_iter().map(|(offset, m)| (offset, m.to_vec())));
                read.end_of_segment = found.end_of_segment;
            }
            read.end = read.end.max(section.end);
            if read.end_of_segment {
                break;
            }
        }
        Ok(read)
    }
}

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

/// Whether a visit goes on after an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Where a pass over a segment ended.
#[derive(Debug, Default)]
pub struct Visit {
    /// Logical end of the last section read completely (a marker slot, where no entry starts).
    pub end: usize,
    /// A zero entry size ended the segment.
    pub end_of_segment: bool,
    /// The visitor stopped the pass after an entry.
    pub stopped: bool,
    /// Damage that ended the pass, after everything before it was visited.
    pub error: Option<Error>,
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

    /// The sections up to `limit`; an error in the chain is returned after the sections before it.
    pub fn sections(&self, limit: Option<usize>) -> (Vec<Section>, Option<Error>) {
        let mut found = Vec::new();
        let chain = match sections(&self.map, &self.descriptor, limit) {
            Ok(chain) => chain,
            Err(error) => return (found, Some(error)),
        };
        for section in chain {
            match section {
                Ok(section) => found.push(section),
                Err(error) => return (found, Some(error)),
            }
        }
        (found, None)
    }

    /// Visit each entry of the sections up to `limit` at or after logical position `start`, in
    /// order, with its logical offset and mutation bytes.
    pub fn visit(
        &self,
        limit: Option<usize>,
        start: Option<usize>,
        mut visitor: impl FnMut(usize, &[u8]) -> Flow,
    ) -> Visit {
        let mut visit = Visit { end: self.descriptor.header_length, ..Visit::default() };
        let chain = match sections(&self.map, &self.descriptor, limit) {
            Ok(chain) => chain,
            Err(error) => return Visit { error: Some(error), ..visit },
        };
        for section in chain {
            let section = match section {
                Ok(section) => section,
                Err(error) => return Visit { error: Some(error), ..visit },
            };
            if start.is_none_or(|s| section.end > s) {
                let from = match start {
                    Some(s) if section.start <= s => s,
                    _ => section.start,
                };
                let (content, base) = match section.load(&self.map, self.codec) {
                    Ok(loaded) => loaded,
                    Err(error) => return Visit { error: Some(error), ..visit },
                };
                let mut found = entries(&content, base, from, section.end);
                for entry in found.by_ref() {
                    match entry {
                        Ok((offset, mutation)) => {
                            if visitor(offset, mutation) == Flow::Stop {
                                return Visit { stopped: true, ..visit };
                            }
                        }
                        Err(error) => return Visit { error: Some(error), ..visit },
                    }
                }
                visit.end_of_segment = found.inner().end_of_segment;
            }
            visit.end = visit.end.max(section.end);
            if visit.end_of_segment {
                break;
            }
        }
        visit
    }
}

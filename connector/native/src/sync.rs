//! Sync sections: the chain of sync markers that follows the descriptor.
//!
//!     int32 next | int32 CRC32(id_lo, id_hi, marker position) | section content up to `next`
//!
//! Compressed segments add `int32 uncompressedLength` and store the content as one compressed
//! block. Positions handed out are logical: the layout an uncompressed segment would have, which
//! is what Cassandra and the `_cdc.idx` file count in.
//!
//! Where the chain ends decides what is data: a zero marker, EOF or a section reaching past
//! `limit` ends reading cleanly. A damaged marker before `limit` is an error; after it (or with
//! no limit) it is the torn tail of a live segment and ends the chain. A zero marker before
//! `limit` is not an error: idx files rewritten at startup give the file length, which lies past
//! the chain of a preallocated segment.

use std::borrow::Cow;

use crate::bytes::{be_i32, be_u32};
use crate::compression::Codec;
use crate::descriptor::Descriptor;
use crate::error::{Error, Kind, Result, UntilError};

pub const MARKER_SIZE: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// File offset of the sync marker.
    pub marker: usize,
    /// Logical position of the first entry.
    pub start: usize,
    /// Logical position where the section (and the next marker) starts.
    pub end: usize,
    /// File range of the compressed block; None when the content lies in place.
    compressed: Option<(usize, usize)>,
}

impl Section {
    /// The content, with logical position x at `content[x - base]`; compressed sections are
    /// decompressed here, in-place ones borrowed from the mapped file.
    pub fn load<'a>(&self, buf: &'a [u8], codec: Option<Codec>) -> Result<(Cow<'a, [u8]>, usize)> {
        let Some((begin, end)) = self.compressed else { return Ok((Cow::Borrowed(buf), 0)) };
        let codec = codec.expect("a compressed section has a codec");
        let length = self.end - self.start;
        let data = codec
            .decompress(&buf[begin..end], length)
            .map_err(|why| Error::new(Kind::Corrupt, begin as u64, format!("cannot decompress section: {why}")))?;
        if data.len() != length {
            return Err(Error::new(
                Kind::Corrupt,
                begin as u64,
                format!("section decompresses to {} bytes, expected {length}", data.len()),
            ));
        }
        Ok((Cow::Owned(data), self.start))
    }
}

/// The codec of the segment's compressor; an unknown one is unsupported.
pub fn codec_of(descriptor: &Descriptor) -> Result<Option<Codec>> {
    match &descriptor.compression {
        None => Ok(None),
        Some(name) => Codec::named(name)
            .map(Some)
            .ok_or_else(|| Error::new(Kind::Unsupported, 14, format!("unsupported compressor {name}"))),
    }
}

/// Sections of the segment in `buf`, in order, up to the end of the marker chain; lazily, so the
/// sections before a damaged marker are read before its error.
pub struct Chain<'a> {
    buf: &'a [u8],
    id: u64,
    compressed: bool,
    limit: Option<usize>,
    pos: usize,
    logical: usize,
}

pub fn sections<'a>(buf: &'a [u8], descriptor: &Descriptor, limit: Option<usize>) -> Result<UntilError<Chain<'a>>> {
    let compressed = codec_of(descriptor)?.is_some();
    let pos = descriptor.header_length;
    Ok(UntilError::new(Chain { buf, id: descriptor.segment_id as u64, compressed, limit, pos, logical: pos }))
}

impl Iterator for Chain<'_> {
    type Item = Result<Section>;

    /// The next section; None at the end of the chain, which stays its end.
    fn next(&mut self) -> Option<Result<Section>> {
        let (buf, pos, limit) = (self.buf, self.pos, self.limit);
        let file_length = buf.len();
        let durable = matches!(limit, Some(l) if self.logical < l);
        let fail = |kind, at: usize, message: String| Some(Err(Error::new(kind, at as u64, message)));
        if pos + MARKER_SIZE > file_length {
            if durable {
                return fail(Kind::Truncated, pos, format!("file ends before the durable limit {}", limit.unwrap()));
            }
            return None;
        }
        let next = be_i32(buf, pos).expect("in bounds");
        let crc = be_u32(buf, pos + 4).expect("in bounds");
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&(self.id as u32).to_be_bytes());
        hasher.update(&((self.id >> 32) as u32).to_be_bytes());
        hasher.update(&(pos as u32).to_be_bytes());
        if crc != hasher.finalize() {
            if (next == 0 && crc == 0) || !durable {
                return None;
            }
            return fail(Kind::Crc, pos, "sync marker CRC mismatch".into());
        }
        let header = if self.compressed { MARKER_SIZE + 4 } else { MARKER_SIZE };
        if next as i64 > file_length as i64 {
            if durable || limit.is_none() {
                return fail(Kind::Truncated, pos, format!("sync section ends at {next}, past EOF {file_length}"));
            }
            return None;
        }
        if (next as i64) < (pos + header) as i64 {
            if durable || limit.is_none() {
                return fail(Kind::Corrupt, pos, format!("sync marker points backwards to {next}"));
            }
            return None;
        }
        let next = next as usize;
        let start = self.logical + MARKER_SIZE;
        let end = if self.compressed {
            let length = be_i32(buf, pos + MARKER_SIZE).expect("in bounds");
            if length < 0 {
                return fail(Kind::Corrupt, pos + MARKER_SIZE, format!("negative section length {length}"));
            }
            start + length as usize
        } else {
            next
        };
        if matches!(limit, Some(l) if end > l) {
            return None;
        }
        let block = if self.compressed { Some((pos + header, next)) } else { None };
        self.pos = next;
        self.logical = end;
        Some(Ok(Section { marker: pos, start, end, compressed: block }))
    }
}

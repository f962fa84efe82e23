//! Block decompressors for compressed segments, one block per sync section.

use std::io::Read;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Lz4,
    Snappy,
    Deflate,
    Zstd,
    Noop,
}

impl Codec {
    /// The codec of a short compressor class name, None if this reader has none for it.
    pub fn named(name: &str) -> Option<Codec> {
        match name {
            "LZ4Compressor" => Some(Codec::Lz4),
            "SnappyCompressor" => Some(Codec::Snappy),
            "DeflateCompressor" => Some(Codec::Deflate),
            "ZstdCompressor" => Some(Codec::Zstd),
            "NoopCompressor" => Some(Codec::Noop),
            _ => None,
        }
    }

    /// The block decompressed; `length` is the uncompressed length the section announces.
    pub fn decompress(self, block: &[u8], length: usize) -> Result<Vec<u8>, String> {
        match self {
            Codec::Lz4 => {
                // lz4-java's block format: the uncompressed length (4 bytes, little-endian), the raw block.
                let head: [u8; 4] =
                    block.get(..4).ok_or("LZ4 block shorter than its length")?.try_into().expect("4 bytes");
                let stated = u32::from_le_bytes(head) as usize;
                lz4_flex::block::decompress(&block[4..], stated).map_err(|e| e.to_string())
            }
            Codec::Snappy => snap::raw::Decoder::new().decompress_vec(block).map_err(|e| e.to_string()),
            Codec::Deflate => miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(block, length)
                .map_err(|e| format!("{:?}", e.status)),
            Codec::Zstd => {
                // The frame may omit its content size: read one byte past `length` to see an overrun.
                let decoder = ruzstd::decoding::StreamingDecoder::new(block).map_err(|e| e.to_string())?;
                let mut out = Vec::with_capacity(length);
                decoder.take(length as u64 + 1).read_to_end(&mut out).map_err(|e| e.to_string())?;
                Ok(out)
            }
            Codec::Noop => Ok(block.to_vec()),
        }
    }
}

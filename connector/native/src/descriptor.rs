//! Segment descriptor: the header at the start of every commit log segment.
//!
//!     int32 version | int64 id | uint16 N | N bytes JSON parameters | int32 CRC
//!
//! The CRC covers version, the id as low word then high word, N widened to four bytes and the
//! parameters (CommitLogDescriptor.writeHeader).

use crate::bytes::{be_i32, be_i64, be_u16, be_u32};
use crate::error::{Error, Kind, Result};

const FIXED: usize = 14;
const COMPRESSOR_PACKAGE: &str = "org.apache.cassandra.io.compress.";

#[derive(Clone, Debug)]
pub struct Descriptor {
    pub version: i32,
    pub segment_id: i64,
    /// The parameters as written: a JSON object.
    pub parameters: String,
    pub header_length: usize,
    /// Short compressor class name (e.g. `LZ4Compressor`), None if uncompressed.
    pub compression: Option<String>,
}

impl Descriptor {
    /// The messaging version the mutations are serialized with.
    pub fn messaging_version(&self) -> u32 {
        messaging_version(self.version).expect("checked when read")
    }
}

fn messaging_version(descriptor_version: i32) -> Option<u32> {
    match descriptor_version {
        6 => Some(10),
        7 => Some(12),
        8 => Some(13),
        _ => None,
    }
}

/// Parse and verify the header at the start of `buf`; `named_id` is the id in the file name.
pub fn read_descriptor(buf: &[u8], named_id: Option<i64>) -> Result<Descriptor> {
    let truncated = || Error::new(Kind::Truncated, buf.len() as u64, "file ends inside the segment header");
    if buf.len() < FIXED {
        return Err(truncated());
    }
    let version = be_i32(buf, 0).ok_or_else(truncated)?;
    let segment_id = be_i64(buf, 4).ok_or_else(truncated)?;
    let params_length = be_u16(buf, 12).ok_or_else(truncated)? as usize;
    let end = FIXED + params_length;
    let stored = be_u32(buf, end).ok_or_else(truncated)?;
    let params = &buf[FIXED..end];
    let mut crc = crc32fast::Hasher::new();
    crc.update(&version.to_be_bytes());
    crc.update(&(segment_id as u32).to_be_bytes());
    crc.update(&((segment_id as u64 >> 32) as u32).to_be_bytes());
    crc.update(&(params_length as u32).to_be_bytes());
    crc.update(params);
    let expected = crc.finalize();
    if stored != expected {
        return Err(Error::new(
            Kind::Crc,
            end as u64,
            format!("header CRC {stored:#010x} != computed {expected:#010x}"),
        ));
    }
    if messaging_version(version).is_none() {
        return Err(Error::new(Kind::UnsupportedVersion, 0, format!("unsupported descriptor version {version}")));
    }
    let not_json =
        |why: String| Error::new(Kind::Corrupt, FIXED as u64, format!("header parameters are not JSON: {why}"));
    let text = std::str::from_utf8(params).map_err(|e| not_json(e.to_string()))?;
    let parsed: serde_json::Value = serde_json::from_str(text).map_err(|e| not_json(e.to_string()))?;
    let object = parsed
        .as_object()
        .ok_or_else(|| Error::new(Kind::Corrupt, FIXED as u64, "header parameters are not a JSON object"))?;
    if let Some(named) = named_id {
        if named != segment_id {
            return Err(Error::new(
                Kind::Corrupt,
                4,
                format!("header id {segment_id} differs from the file name id {named}"),
            ));
        }
    }
    if object.contains_key("encKeyAlias") && object.contains_key("encCipher") {
        return Err(Error::new(Kind::Encrypted, FIXED as u64, "unsupported: encrypted segment"));
    }
    let compression = match object.get("compressionClass") {
        Some(serde_json::Value::String(name)) if !name.is_empty() => {
            Some(name.strip_prefix(COMPRESSOR_PACKAGE).unwrap_or(name).to_string())
        }
        _ => None,
    };
    Ok(Descriptor { version, segment_id, parameters: text.to_string(), header_length: end + 4, compression })
}

/// The id in a `CommitLog-<version>-<id>.log` file name, if it is one.
pub fn segment_id_from_name(name: &str) -> Option<i64> {
    let rest = name.strip_suffix(".log")?;
    let start = rest.rfind("CommitLog-")?;
    let (version, id) = rest[start + "CommitLog-".len()..].split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(version) || !digits(id) {
        return None;
    }
    id.parse().ok()
}

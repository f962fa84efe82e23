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

#[cfg(test)]
mod tests {
    use super::{read_descriptor, segment_id_from_name};
    use crate::error::Kind;

    /// A header as CommitLogDescriptor.writeHeader makes it.
    fn header(version: i32, id: i64, params: &str) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&(params.len() as u16).to_be_bytes());
        out.extend_from_slice(params.as_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&version.to_be_bytes());
        crc.update(&(id as u32).to_be_bytes());
        crc.update(&((id as u64 >> 32) as u32).to_be_bytes());
        crc.update(&(params.len() as u32).to_be_bytes());
        crc.update(params.as_bytes());
        out.extend_from_slice(&crc.finalize().to_be_bytes());
        out
    }

    #[test]
    fn a_header_gives_its_version_id_and_compressor() {
        let params =
            r#"{"compressionParameters":{},"compressionClass":"org.apache.cassandra.io.compress.LZ4Compressor"}"#;
        let bytes = header(7, 1_795_323_511_297, params);
        let d = read_descriptor(&bytes, Some(1_795_323_511_297)).unwrap();
        assert_eq!((d.version, d.segment_id, d.messaging_version()), (7, 1_795_323_511_297, 12));
        assert_eq!(d.compression.as_deref(), Some("LZ4Compressor"));
        assert_eq!(d.header_length, bytes.len());
    }

    #[test]
    fn damage_is_a_typed_error_at_its_position() {
        let mut bytes = header(8, 42, "{}");
        bytes[9] ^= 1; // inside the id: the CRC no longer matches
        let error = read_descriptor(&bytes, None).unwrap_err();
        assert_eq!((error.kind, error.position), (Kind::Crc, 16));
        let error = read_descriptor(&header(8, 42, "{}")[..10], None).unwrap_err();
        assert_eq!(error.kind, Kind::Truncated);
        let error = read_descriptor(&header(5, 42, "{}"), None).unwrap_err();
        assert_eq!(error.kind, Kind::UnsupportedVersion);
        let error = read_descriptor(&header(7, 42, "{}"), Some(43)).unwrap_err();
        assert_eq!((error.kind, error.position), (Kind::Corrupt, 4));
        let encrypted = header(7, 42, r#"{"encKeyAlias":"k","encCipher":"AES"}"#);
        assert_eq!(read_descriptor(&encrypted, None).unwrap_err().kind, Kind::Encrypted);
    }

    #[test]
    fn segment_ids_come_from_file_names() {
        assert_eq!(segment_id_from_name("CommitLog-7-1795323511297.log"), Some(1_795_323_511_297));
        assert_eq!(segment_id_from_name("CommitLog-7-1795323511297_cdc.idx"), None);
    }
}

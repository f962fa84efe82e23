//! Errors as values, each carrying the byte position where reading stopped.
//!
//! The kinds mirror `connector.commitlog.errors`, whose classes the Python binding raises, so a
//! caller sees the same typed error from the native reader as from the reference one.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Bytes inside the durable part of a segment do not follow the format.
    Corrupt,
    /// A header, sync marker or entry CRC does not match its bytes.
    Crc,
    /// The file ends before the durable data it announces.
    Truncated,
    /// A well-formed segment this reader cannot decode.
    Unsupported,
    /// A descriptor version without a known messaging version.
    UnsupportedVersion,
    /// Transparent data encryption.
    Encrypted,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    /// File offset, or logical offset inside a compressed segment's sections.
    pub position: u64,
    pub message: String,
}

impl Error {
    pub fn new(kind: Kind, position: u64, message: impl Into<String>) -> Self {
        Error { kind, position, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@ {}: {}", self.position, self.message)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

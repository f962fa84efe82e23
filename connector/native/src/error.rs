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

/// An iterator of results that ends at its first error, as reading stops at damage.
pub struct UntilError<I> {
    inner: I,
    failed: bool,
}

impl<I> UntilError<I> {
    pub fn new(inner: I) -> Self {
        UntilError { inner, failed: false }
    }

    pub fn inner(&self) -> &I {
        &self.inner
    }
}

impl<T, I: Iterator<Item = Result<T>>> Iterator for UntilError<I> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        if self.failed {
            return None;
        }
        let item = self.inner.next();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}

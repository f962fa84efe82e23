//! What decoding a CRC-valid mutation with a schema that does not fit it gives: the byte
//! position inside the mutation where it stopped, and why. The mutation decoder turns it into a
//! schema mismatch of the entry.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misfit {
    pub position: usize,
    pub message: String,
}

impl Misfit {
    pub fn at(position: usize, message: impl Into<String>) -> Misfit {
        Misfit { position, message: message.into() }
    }
}

pub type Partial<T> = Result<T, Misfit>;

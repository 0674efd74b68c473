//! Per-architecture token tables and rules.

pub mod gfx9;
pub mod locations;
pub mod rdna;
pub mod registers;
pub mod table;
pub mod userdata;

/// Why a buffer could not be decoded to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the buffer does not start with a known trace header")]
    UnknownHeader,
    #[error("the trace is corrupt at byte {0}")]
    Corrupt(usize),
    #[error("trace version {0} is not supported")]
    UnsupportedVersion(u8),
}

//! The one error type of the decoder and the scanner: what went wrong, in which buffer and at
//! which byte. The C layer (`crate::ffi`) alone turns it into a status code.

/// What stopped a decode or a scan.
///
/// The tags start at 1 so that `Ok(())` of a `Result<(), ErrorKind>` is tag 0: the gfx9 token
/// handlers return one per token, and a zero test keeps them as cheap as a `bool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[repr(u8)]
pub enum ErrorKind {
    #[error("the buffer does not start with a known trace header")]
    UnknownHeader = 1,
    #[error("the buffer ends before its first token")]
    Truncated,
    #[error("trace version {0} is not supported")]
    UnsupportedVersion(u8),
    /// gfx9: a wave token names a wave slot above 9 (the data is corrupt).
    #[error("a token names a wave slot that does not exist")]
    InvalidWaveSlot,
    #[error("a chunk holds at least the 8-byte header word")]
    ChunkTooShort,
    #[error("the previous chunk's state was not published in time")]
    MissingPreviousChunk,
    #[error("no record callback was given")]
    MissingCallback,
    /// The scanner knows gfx9, gfx12 and gfx12.5 streams only.
    #[error("the trace family cannot be scanned")]
    UnsupportedArch,
    #[error("the record callback stopped the scan with status {0}")]
    StoppedByCallback(i32),
}

/// Why a buffer (or chunk) could not be decoded (or scanned) to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} (buffer {buffer}, byte {offset})")]
pub struct DecodeError {
    pub kind: ErrorKind,
    /// Which SE buffer of the parse call (from 0), or the chunk index of a scan.
    pub buffer: usize,
    /// Byte offset in that buffer (header included) of the token or field at fault.
    pub offset: usize,
}

impl DecodeError {
    pub fn new(kind: ErrorKind, buffer: usize, offset: usize) -> Self {
        DecodeError {
            kind,
            buffer,
            offset,
        }
    }
}

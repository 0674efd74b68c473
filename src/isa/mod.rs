//! ISA providers: where instruction text and encoded sizes come from.
//!
//! The stitcher asks an [`IsaProvider`] for each PC it visits (through a per-parse cache in
//! `wave`); providers are the client's ISA callback ([`callback`]) or code objects loaded into
//! the handle with a run-time disassembler back-end.

pub mod callback;
pub mod classify;

use crate::records::Pc;

/// Why a provider could not answer for a PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IsaError {
    #[error("the ISA provider failed with status {0}")]
    Failed(i32),
    #[error("no code object covers this address")]
    UnknownAddress,
}

/// A source of disassembly.
pub trait IsaProvider {
    /// Writes the instruction text at `pc` into `text` (cleared first, no NUL) and returns the
    /// instruction's encoded size in bytes (0 is allowed: "custom ISA").
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError>;
}

/// A provider that knows nothing: every PC fails, so instructions keep PC {0,0}.
pub struct NoIsa;

impl IsaProvider for NoIsa {
    fn disassemble(&mut self, _pc: Pc, _text: &mut Vec<u8>) -> Result<u64, IsaError> {
        Err(IsaError::UnknownAddress)
    }
}

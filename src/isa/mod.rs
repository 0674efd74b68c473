//! ISA providers: where instruction text and encoded sizes come from.
//!
//! The stitcher asks an [`IsaProvider`] for each PC it visits (through a per-parse cache in
//! `wave`); providers are the client's ISA callback ([`callback`]) or code objects loaded into
//! the handle with a disassembler back-end (a library found at run time, or the built-in tables).

pub mod backend;
pub mod builtin;
pub mod callback;
pub mod classify;
pub mod codeobj;
pub mod funcmap;

use std::sync::Arc;

use crate::records::Pc;
use crate::stream::header::TraceKind;
use funcmap::Funcmap;

/// Why a provider could not answer for a PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IsaError {
    #[error("the ISA provider failed with status {0}")]
    Failed(i32),
    #[error("no code object covers this address")]
    UnknownAddress,
    #[error("the bytes at this address are no instruction the disassembler knows")]
    Undecodable,
    #[error("no disassembler back-end knows the code object's target")]
    NoDisassembler,
}

/// A source of disassembly.
pub trait IsaProvider {
    /// Writes the instruction text at `pc` into `text` (cleared first, no NUL) and returns the
    /// instruction's encoded size in bytes (0 is allowed: "custom ISA").
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError>;

    /// [`IsaProvider::disassemble`] for a caller that only reads the text, which lends
    /// `scratch`, a buffer it keeps between questions: the provider writes the answer there or
    /// lends it from where it holds it.
    fn answer<'a>(
        &'a mut self,
        pc: Pc,
        scratch: &'a mut Vec<u8>,
    ) -> Result<(u64, &'a [u8]), IsaError> {
        let memory_size = self.disassemble(pc, scratch)?;
        Ok((memory_size, scratch))
    }

    /// The provider as the client's ISA callback, if it is one: the stitcher is compiled for
    /// that provider apart, so that each question calls the client directly, without a
    /// dispatch through this trait.
    fn as_callback(&mut self) -> Option<&mut callback::CallbackIsa> {
        None
    }

    /// Told the family of each SE buffer before it is decoded: built-in disassembly takes the
    /// target processor from it for code objects that do not name theirs.
    fn trace_kind(&mut self, _kind: TraceKind) {}

    /// The marker names of code object `code_object_id` (its `.sqtt_funcmap` section); only
    /// built-in disassembly over loaded code objects has them.
    fn funcmap(&mut self, _code_object_id: u64) -> Option<Arc<Funcmap>> {
        None
    }

    /// Whether [`IsaProvider::funcmap`] can answer for any code object.
    fn has_funcmaps(&self) -> bool {
        false
    }
}

/// A provider that knows nothing: every PC fails, so instructions keep PC {0,0}.
pub struct NoIsa;

impl IsaProvider for NoIsa {
    fn disassemble(&mut self, _pc: Pc, _text: &mut Vec<u8>) -> Result<u64, IsaError> {
        Err(IsaError::UnknownAddress)
    }
}

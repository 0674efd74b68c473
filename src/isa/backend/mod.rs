//! Disassembler back-ends, loaded at run time with `libloading` (no link-time dependency).
//!
//! Two library kinds are understood: AMD's COMGR (`libamd_comgr`) and LLVM's C disassembler
//! from a shared `libLLVM` (16 or newer). Both produce llvm-objdump's instruction text. The
//! third kind needs no library: the built-in tables ([`crate::isa::builtin`]), which give LLVM's
//! mnemonic and size (and a branch's immediate) for the processors they were generated for.
//!
//! Search order (done once per process, on first use):
//! 1. If `ROCPROF_TRACE_DECODER_DISASM` is `builtin`, only the built-in tables are used. If it
//!    is set otherwise, only that library (a path or a file name) is tried; its kind is
//!    recognised from the symbols it exports. Nothing else is searched.
//! 2. Otherwise the first COMGR found of `libamd_comgr.so.3`, `/opt/rocm/lib/libamd_comgr.so.3`,
//!    `libamd_comgr.so.2`, `/opt/rocm/lib/libamd_comgr.so.2`; then the newest LLVM found, for
//!    each major from 22 down to 16: `libLLVM.so.<M>.1`, `libLLVM.so.<M>`, `libLLVM-<M>.so`,
//!    `/usr/lib/llvm-<M>/lib/libLLVM.so.<M>.1` (Debian's and Fedora's names); then the
//!    built-in tables, always.
//!
//! Each target processor is disassembled by the first back-end in that order that knows it
//! (COMGR lists its processors; LLVM's are known per major version), so an old COMGR without
//! gfx11 still leaves gfx11 to LLVM. Whatever back-end rejects, the code-object table asks the
//! built-in tables past LLVM about ([`crate::isa::builtin::Tables::decode_past_llvm`]).

mod comgr;
mod dl;
mod llvm;

use std::sync::OnceLock;

use super::builtin::Tables;
use comgr::{Comgr, ComgrContext};
use dl::Library;
use llvm::{Llvm, LlvmContext};

/// Environment variable naming the one back-end library to use.
pub const DISASM_ENV: &str = "ROCPROF_TRACE_DECODER_DISASM";

/// The value of [`DISASM_ENV`] that picks the built-in tables.
pub const BUILTIN: &str = "builtin";

const COMGR_CANDIDATES: &[&str] = &[
    "libamd_comgr.so.3",
    "/opt/rocm/lib/libamd_comgr.so.3",
    "libamd_comgr.so.2",
    "/opt/rocm/lib/libamd_comgr.so.2",
];
const NEWEST_LLVM: u32 = 22;
const OLDEST_LLVM: u32 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Comgr,
    Llvm,
    Builtin,
}

/// A loaded disassembler library, or the built-in tables.
pub struct Backend {
    /// `None` for the built-in tables.
    library: Option<Library>,
    api: Api,
}

enum Api {
    Comgr(Comgr),
    Llvm(Llvm),
    Builtin,
}

impl Backend {
    /// Loads `name` as a back-end, recognising COMGR or LLVM by its exports.
    pub fn load(name: &str) -> Option<Backend> {
        let library = Library::open(name)?;
        let api = match Comgr::bind(&library) {
            Some(comgr) => Api::Comgr(comgr),
            None => Api::Llvm(Llvm::bind(&library)?),
        };
        Some(Backend {
            library: Some(library),
            api,
        })
    }

    /// The built-in tables as a back-end.
    pub fn builtin() -> Backend {
        Backend {
            library: None,
            api: Api::Builtin,
        }
    }

    /// The shared libLLVM of major version `major`, by Debian's and Fedora's names.
    pub fn llvm(major: u32) -> Option<Backend> {
        [
            format!("libLLVM.so.{major}.1"),
            format!("libLLVM.so.{major}"),
            format!("libLLVM-{major}.so"),
            format!("/usr/lib/llvm-{major}/lib/libLLVM.so.{major}.1"),
        ]
        .iter()
        .filter_map(|name| Backend::load(name))
        .find(|backend| backend.kind() == BackendKind::Llvm)
    }

    pub fn kind(&self) -> BackendKind {
        match self.api {
            Api::Comgr(_) => BackendKind::Comgr,
            Api::Llvm(_) => BackendKind::Llvm,
            Api::Builtin => BackendKind::Builtin,
        }
    }

    /// The name or path the library was opened by (`builtin` for the tables).
    pub fn name(&self) -> &str {
        self.library
            .as_ref()
            .map_or(BUILTIN, |library| &library.name)
    }

    /// True when this back-end can disassemble for processor `cpu` (e.g. `gfx1100`).
    pub fn supports(&self, cpu: &str) -> bool {
        match &self.api {
            Api::Comgr(comgr) => comgr.supports(cpu),
            Api::Llvm(llvm) => llvm.supports(cpu),
            Api::Builtin => Tables::supports(cpu),
        }
    }

    /// A disassembler for `cpu`, or `None` when this back-end does not know it.
    pub fn open(&self, cpu: &str) -> Option<Disassembler> {
        if !self.supports(cpu) {
            return None;
        }
        match &self.api {
            Api::Comgr(comgr) => comgr.open(cpu).map(Disassembler::Comgr),
            Api::Llvm(llvm) => llvm.open(cpu).map(Disassembler::Llvm),
            Api::Builtin => Tables::of(cpu).map(Disassembler::Builtin),
        }
    }
}

/// A disassembler for one target processor.
pub enum Disassembler {
    Comgr(ComgrContext),
    Llvm(LlvmContext),
    Builtin(&'static Tables),
}

impl Disassembler {
    /// Decodes the instruction at the start of `code`, which sits at `address`. On success
    /// `text` holds llvm-objdump's text for it (no surrounding whitespace) and the size in
    /// bytes is returned; `None` when the bytes are no valid instruction.
    pub fn decode(&mut self, code: &[u8], address: u64, text: &mut Vec<u8>) -> Option<usize> {
        text.clear();
        let size = match self {
            Disassembler::Comgr(context) => context.decode(code, address, text),
            Disassembler::Llvm(context) => context.decode(code, address, text),
            Disassembler::Builtin(tables) => tables.decode(code, text),
        }?;
        let end = text
            .iter()
            .rposition(|c| !c.is_ascii_whitespace())
            .map_or(0, |i| i + 1);
        let start = text
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .unwrap_or(end);
        text.truncate(end);
        text.drain(..start);
        Some(size)
    }
}

/// The back-ends of this process, discovered once (see the module documentation).
pub fn system() -> &'static [Backend] {
    static BACKENDS: OnceLock<Vec<Backend>> = OnceLock::new();
    BACKENDS.get_or_init(|| match std::env::var(DISASM_ENV) {
        Ok(name) if name == BUILTIN => vec![Backend::builtin()],
        Ok(name) if !name.is_empty() => Backend::load(&name).into_iter().collect(),
        _ => discover(),
    })
}

fn discover() -> Vec<Backend> {
    let comgr = COMGR_CANDIDATES
        .iter()
        .filter_map(|name| Backend::load(name))
        .find(|backend| backend.kind() == BackendKind::Comgr);
    let llvm = (OLDEST_LLVM..=NEWEST_LLVM).rev().find_map(Backend::llvm);
    comgr
        .into_iter()
        .chain(llvm)
        .chain([Backend::builtin()])
        .collect()
}

//! The C ABI of the 0.3.0 header set and of the extras beyond it (the PMA decoder, built-in
//! disassembly). This layer validates every pointer, size and handle, keeps panics from crossing
//! into C, and converts between C and Rust types; it holds no decoding logic. Every exported
//! function goes through `boundary`: one panic guard, one set of pointer checks, one handle
//! registry.

mod boundary;

pub use boundary::caught_panics;
pub mod c_enums;
pub mod c_instrument;
pub mod disasm;
pub mod handle;
pub mod info;
pub mod parse;
pub mod pma;
pub mod scan;
pub mod types;

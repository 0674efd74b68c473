//! Drop-in replacement for AMD's `librocprof-trace-decoder.so`: decodes AMD GPU thread traces
//! (SQTT / ATT) into the records of the 0.3.0 C ABI.

pub mod arch;
pub mod check;
pub mod decode;
pub mod ffi;
pub mod isa;
pub mod pma;
pub mod records;
pub mod scan;
pub mod sink;
pub mod spare;
pub mod stream;
pub mod wave;

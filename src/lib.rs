//! Drop-in replacement for AMD's `librocprof-trace-decoder.so`: decodes AMD GPU thread traces
//! (SQTT / ATT) into the records of the 0.3.0 C ABI.

mod api;

/// The README's Rust example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod arch;
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

pub use api::{
    CodeObjectError, CodeObjects, DecodeError, Decoder, IsaError, IsaFn, IsaProvider, MarkerView,
    MarkerViews, NoIsa, QuickScanner, Record, ScanError, WaveView,
};
pub use pma::{PmaDecoder, PmaSample, PmaStats, SampleFormat, StallReason};
pub use records::{
    Category, Dispatch, Event, EventKind, InfoCode, Inst, InstOtherSimd, Occupancy, Pc, PerfEvent,
    Realtime, RecordKind, ShaderData, WaveState,
};
pub use sink::check;

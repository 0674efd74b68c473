//! Drop-in replacement for AMD's `librocprof-trace-decoder.so`: decodes AMD GPU thread traces
//! (SQTT / ATT) into the records of the 0.3.0 C ABI.
//!
//! Rust code uses the safe API at the crate root: a [`Decoder`] with its ISA source hands each
//! record to a closure as a [`Record`] (slices of the plain records of [`records`] and views of
//! waves and markers, no raw pointers); [`QuickScanner`] finds dispatches and events without
//! decoding waves; [`PmaDecoder`] decodes NVIDIA PC-sampling streams. [`ffi`] is the C ABI
//! (`librocprof-trace-decoder.so`), for C callers.

mod api;
mod error;

/// The README's Rust example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod ffi;
pub mod pma;
pub mod records;

/// Declares the internal modules: `pub(crate)`, or `pub` (and hidden from the documentation)
/// with the `internals` feature, which only this crate's own tests, examples and fuzz targets
/// enable (Cargo.toml's dev-dependency on the crate itself). Nothing in them is API.
macro_rules! internal_modules {
    ($($module:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $module;
        #[cfg(not(feature = "internals"))]
        #[allow(unreachable_pub)]
        pub(crate) mod $module;
    )*};
}

internal_modules!(arch, decode, isa, scan, sink, spare, stream, wave);

#[cfg(any(test, feature = "internals"))]
#[doc(hidden)]
pub mod testing;

pub use api::{
    CodeObjectError, CodeObjects, DecodeError, Decoder, ErrorKind, IsaError, IsaFn, IsaProvider,
    MarkerView, MarkerViews, NoIsa, QuickScanner, Record, WaveView,
};
pub use pma::{PmaDecoder, PmaSample, PmaStats, SampleFormat, StallReason};
pub use records::{
    Category, Dispatch, Event, EventKind, InfoCode, Inst, InstOtherSimd, Occupancy, Pc, PerfEvent,
    Realtime, RecordKind, ShaderData, WaveState,
};

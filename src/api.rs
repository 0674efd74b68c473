//! The safe Rust API: decode thread traces without `unsafe` and without the C layout.
//!
//! A [`Decoder`] owns its ISA source (anything implementing [`IsaProvider`]: a closure through
//! [`IsaFn`], the code objects of a [`CodeObjects`] table, or [`NoIsa`]) and the set of record
//! types to deliver. [`Decoder::parse`] decodes the SE buffers of one capture and hands each
//! delivery to a closure as a [`Record`], which borrows the decoder's storage for the duration
//! of that call: slices of plain records, and views ([`WaveView`], [`MarkerView`]) whose arrays
//! and strings are slices and `&CStr`s instead of raw pointers.
//!
//! ```
//! use rocprof_trace_decoder::{Decoder, NoIsa, Record};
//!
//! // A gfx9 trace header and nothing else: the decoder reports the GFXIP and no waves.
//! let mut trace = (0x11u64 | (5 << 13) | (0xF << 16)).to_le_bytes().to_vec();
//! trace.extend_from_slice(&[0; 64]);
//!
//! let mut decoder = Decoder::new(NoIsa);
//! let mut waves = 0;
//! let mut gfxip = None;
//! decoder
//!     .parse([trace.as_slice()], |record| match record {
//!         Record::Gfxip(major) => gfxip = Some(major),
//!         Record::Wave(wave) => waves += wave.instructions().len(),
//!         _ => {}
//!     })
//!     .unwrap();
//! assert_eq!(gfxip, Some(9));
//! assert_eq!(waves, 0);
//! ```

use std::ffi::CStr;

use crate::decode::Session;
use crate::isa::codeobj::CodeObjectTable;
use crate::records::{
    for_each_record_kind, record_payload, Category, Dispatch, Event, EventKind, InfoCode, Inst,
    InstOtherSimd, Marker, Occupancy, Pc, PerfEvent, Realtime, RecordKind, ShaderData, Wave,
    WaveState,
};
use crate::scan::chunks::ScanChunks;
use crate::sink::{self, Delivery, Emitter, Filter};

pub use crate::error::{DecodeError, ErrorKind};
pub use crate::isa::codeobj::CodeObjectError;
pub use crate::isa::{IsaError, IsaProvider, NoIsa};

/// The safe API's payload of a delivery: the internal one, or its view.
macro_rules! public_payload {
    ($shape:ident $a:lifetime $payload:ty) => { record_payload!($shape $a $payload) };
    ($shape:ident $a:lifetime $payload:ty => $view:ident) => { $view<$a> };
}

macro_rules! public_view {
    ($raw:expr) => {
        $raw
    };
    ($raw:expr => $view:ident) => {
        $view::of($raw)
    };
}

macro_rules! public_record_enum {
    ($($(#[$doc:meta])* $kind:ident = $code:literal, $c_name:literal:
        $shape:ident $payload:ty $(=> $view:ident)?;)*) => {
        /// One delivery of the decoder, valid for the duration of the closure call that receives it.
        #[derive(Debug)]
        pub enum Record<'a> {
            $($(#[$doc])* $kind(public_payload!($shape 'a $payload $(=> $view)?)),)*
        }

        impl Record<'_> {
            /// The record type, as the C API numbers it.
            pub fn kind(&self) -> RecordKind {
                match self {
                    $(Record::$kind(_) => RecordKind::$kind,)*
                }
            }

            /// Views an internal delivery. Every pointer of the C layout inside it points into
            /// storage the decoder keeps alive until the delivery returns, which `'a` cannot
            /// outlive.
            fn from_sink<'a>(record: &sink::Record<'a>) -> Record<'a> {
                match *record {
                    $(sink::Record::$kind(payload) => {
                        Record::$kind(public_view!(payload $(=> $view)?))
                    })*
                }
            }
        }
    };
}
for_each_record_kind!(public_record_enum);

/// A decoded wave: where it ran, when, and what it executed.
#[derive(Clone, Copy, Debug)]
pub struct WaveView<'a> {
    wave: &'a Wave,
}

impl<'a> WaveView<'a> {
    fn of(wave: &'a Wave) -> Self {
        WaveView { wave }
    }

    pub fn cu(&self) -> u8 {
        self.wave.cu
    }

    pub fn simd(&self) -> u8 {
        self.wave.simd
    }

    pub fn wave_id(&self) -> u8 {
        self.wave.wave_id
    }

    /// How many context saves and restores the wave went through.
    pub fn contexts(&self) -> u8 {
        self.wave.contexts
    }

    pub fn dispatcher(&self) -> u8 {
        self.wave.dispatcher
    }

    pub fn workgroup_id(&self) -> u8 {
        self.wave.workgroup_id
    }

    pub fn cluster_id(&self) -> u8 {
        self.wave.cluster_id
    }

    /// Shader clock of the wave's start.
    pub fn begin_time(&self) -> i64 {
        self.wave.begin_time
    }

    /// Shader clock of the wave's end.
    pub fn end_time(&self) -> i64 {
        self.wave.end_time
    }

    /// The executed instructions in issue order.
    pub fn instructions(&self) -> &'a [Inst] {
        if self.wave.instructions_size == 0 || self.wave.instructions_array.is_null() {
            return &[];
        }
        // SAFETY: the decoder hands over a wave whose array holds `instructions_size` records
        // and stays alive until the delivery returns, which `'a` does not outlive.
        unsafe {
            std::slice::from_raw_parts(
                self.wave.instructions_array,
                self.wave.instructions_size as usize,
            )
        }
    }

    /// The wave's timeline: how long it spent in each state, in order.
    pub fn timeline(&self) -> &'a [WaveState] {
        if self.wave.timeline_size == 0 || self.wave.timeline_array.is_null() {
            return &[];
        }
        // SAFETY: as for `instructions`.
        unsafe {
            std::slice::from_raw_parts(self.wave.timeline_array, self.wave.timeline_size as usize)
        }
    }
}

/// A batch of MARKER records.
#[derive(Clone, Copy, Debug)]
pub struct MarkerViews<'a> {
    markers: &'a [Marker],
}

impl<'a> MarkerViews<'a> {
    fn of(markers: &'a [Marker]) -> Self {
        MarkerViews { markers }
    }

    pub fn len(&self) -> usize {
        self.markers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.markers.is_empty()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = MarkerView<'a>> + 'a {
        self.markers.iter().map(|marker| MarkerView { marker })
    }
}

/// One marker: an `s_ttracedata` word of an instrumented kernel, named by its code object.
#[derive(Clone, Copy, Debug)]
pub struct MarkerView<'a> {
    marker: &'a Marker,
}

impl<'a> MarkerView<'a> {
    /// The SHADERDATA word the marker was decoded from.
    pub fn shader_data(&self) -> &'a ShaderData {
        &self.marker.shaderdata
    }

    pub fn kernel_entry(&self) -> Pc {
        self.marker.kernel_entry
    }

    pub fn code_object_id(&self) -> u64 {
        self.marker.code_object_id
    }

    /// The marker's name from the code object's `.sqtt_funcmap`, when it has one.
    pub fn name(&self) -> Option<&'a CStr> {
        // SAFETY: a non-null name points to a NUL-terminated string the decoder keeps alive
        // until the delivery returns.
        (!self.marker.name.is_null()).then(|| unsafe { CStr::from_ptr(self.marker.name) })
    }

    /// `file:line` of the marker's source, when the funcmap gives one.
    pub fn source_location(&self) -> Option<&'a CStr> {
        // SAFETY: as for `name`.
        (!self.marker.source_location.is_null())
            .then(|| unsafe { CStr::from_ptr(self.marker.source_location) })
    }

    pub fn marker_id(&self) -> u32 {
        self.marker.marker_id
    }

    pub fn record_kind(&self) -> u32 {
        self.marker.record_kind
    }

    pub fn marker_kind(&self) -> u32 {
        self.marker.marker_kind
    }

    pub fn marker_flags(&self) -> u32 {
        self.marker.marker_flags
    }

    pub fn payload_index(&self) -> u32 {
        self.marker.payload_index
    }

    pub fn payload_count(&self) -> u32 {
        self.marker.payload_count
    }

    pub fn delay(&self) -> i32 {
        self.marker.delay
    }
}

impl Inst {
    /// The instruction's category, or `None` for a value outside the C enum.
    pub fn category_kind(&self) -> Option<Category> {
        Category::from_u8(self.category())
    }
}

impl Event {
    /// The event type, or `None` for a value outside the C enum.
    pub fn event_kind(&self) -> Option<EventKind> {
        const ALL: [EventKind; 18] = [
            EventKind::None,
            EventKind::CsPartialFlush,
            EventKind::BottomOfPipeTs,
            EventKind::SaveContext,
            EventKind::DispatchEnd,
            EventKind::CacheFlush,
            EventKind::PacketLoss,
            EventKind::CodeObjectLoad,
            EventKind::CodeObjectUnload,
            EventKind::TtStallBegin,
            EventKind::TtStallEnd,
            EventKind::TtFlush,
            EventKind::DidtStallBegin,
            EventKind::DidtStallEnd,
            EventKind::ClusterBarrier,
            EventKind::Reserved,
            EventKind::GcRinse,
            EventKind::SpmSample,
        ];
        ALL.get(self.kind as usize).copied()
    }

    /// The payload's 8 bytes: a code object id for CODE_OBJECT_LOAD/UNLOAD, the cluster and
    /// barrier ids (low and high 32 bits) for CLUSTER_BARRIER.
    pub fn payload_raw(&self) -> u64 {
        // SAFETY: every member of the union is plain data covering the same 8 bytes.
        unsafe { self.payload.raw }
    }
}

/// An ISA source from a closure: given a PC, write the instruction's text into the buffer and
/// return its encoded size in bytes.
///
/// ```
/// use rocprof_trace_decoder::{Decoder, IsaError, IsaFn, Pc};
///
/// let decoder = Decoder::new(IsaFn(|pc: Pc, text: &mut Vec<u8>| {
///     if pc.code_object_id != 0 {
///         return Err(IsaError::UnknownAddress);
///     }
///     text.extend_from_slice(b"s_nop 0");
///     Ok(4)
/// }));
/// # drop(decoder);
/// ```
pub struct IsaFn<F>(pub F);

impl<F: FnMut(Pc, &mut Vec<u8>) -> Result<u64, IsaError>> IsaProvider for IsaFn<F> {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        (self.0)(pc, text)
    }
}

/// Code objects disassembled by the built-in back-ends (COMGR or libLLVM, opened at run time, or
/// the built-in instruction tables).
#[derive(Default)]
pub struct CodeObjects {
    table: CodeObjectTable,
}

impl CodeObjects {
    /// An empty table over the disassemblers found on this system.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether any disassembler back-end was found; without one, [`CodeObjects::load`] fails.
    pub fn has_disassembler(&self) -> bool {
        !self.table.backends().is_empty()
    }

    /// Registers the ELF code object `elf`, loaded at `[load_addr, load_addr + load_size)` with
    /// the id `load_id` (the id code-object markers in the trace name).
    pub fn load(
        &mut self,
        load_id: u64,
        load_addr: u64,
        load_size: u64,
        elf: &[u8],
    ) -> Result<(), CodeObjectError> {
        self.table.load(load_id, load_addr, load_size, elf)
    }

    /// Removes the code object loaded with `load_id`; false when there is none.
    pub fn unload(&mut self, load_id: u64) -> bool {
        self.table.unload(load_id)
    }
}

impl IsaProvider for CodeObjects {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        self.table.disassemble(pc, text)
    }

    fn trace_kind(&mut self, kind: crate::stream::header::TraceKind) {
        self.table.trace_kind(kind)
    }

    fn funcmap(
        &mut self,
        code_object_id: u64,
    ) -> Option<std::sync::Arc<crate::isa::funcmap::Funcmap>> {
        self.table.funcmap(code_object_id)
    }

    fn has_funcmaps(&self) -> bool {
        self.table.has_funcmaps()
    }
}

/// Decodes the SE buffers of thread traces with one ISA source.
pub struct Decoder<I> {
    isa: I,
    filter: Filter,
}

impl<I: IsaProvider> Decoder<I> {
    /// A decoder that delivers every record type.
    pub fn new(isa: I) -> Self {
        Decoder {
            isa,
            filter: Filter::default(),
        }
    }

    /// Delivers only the record types in `kinds` (the others are not even assembled, which
    /// saves time: e.g. without [`RecordKind::Wave`] no instruction is stitched).
    pub fn only(mut self, kinds: &[RecordKind]) -> Self {
        self.filter = Filter::none();
        for &kind in kinds {
            self.filter.set(kind, Delivery::Pooled);
        }
        self
    }

    /// The ISA source, e.g. to load more code objects between parses.
    pub fn isa_mut(&mut self) -> &mut I {
        &mut self.isa
    }

    pub fn into_isa(self) -> I {
        self.isa
    }

    /// Decodes the SE buffers of one capture (each a complete shader-engine stream, header
    /// included), in order, handing every delivery to `on_record`. On a corrupt buffer, the
    /// records decoded before the damage have been delivered when the error is returned, and
    /// the later buffers are not decoded; the error names the buffer (its index in
    /// `se_buffers`) and the byte at fault.
    pub fn parse<'d>(
        &mut self,
        se_buffers: impl IntoIterator<Item = &'d [u8]>,
        mut on_record: impl FnMut(Record<'_>),
    ) -> Result<(), DecodeError> {
        let mut sink = |record: sink::Record<'_>| {
            on_record(Record::from_sink(&record));
            0
        };
        let mut session = Session::new(Emitter::new(&mut sink, self.filter), &mut self.isa);
        se_buffers
            .into_iter()
            .try_for_each(|data| session.decode_buffer(data))
    }
}

/// Finds the dispatches and events of a trace that arrives in chunks, without decoding waves
/// (the C API's `quick_scan`). Chunk N starts from the register state chunk N−1 ended with.
///
/// ```
/// use rocprof_trace_decoder::{QuickScanner, Record};
///
/// let scanner = QuickScanner::new();
/// let header = (0x11u64 | (5 << 13) | (0xF << 16)).to_le_bytes();
/// let mut dispatches = 0;
/// scanner
///     .scan(0, &header, |record| {
///         if let Record::Dispatch(_) = record {
///             dispatches += 1;
///         }
///     })
///     .unwrap();
/// assert_eq!(dispatches, 0);
/// ```
#[derive(Default)]
pub struct QuickScanner {
    chunks: ScanChunks,
}

impl QuickScanner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Scans chunk `chunk_index` (chunk 0 starts with the trace header). Chunks may be scanned
    /// on several threads; chunk N waits about 0.1 s for chunk N−1. A chunk holds at least the
    /// 8-byte header word ([`ErrorKind::ChunkTooShort`]), or nothing.
    pub fn scan(
        &self,
        chunk_index: u64,
        data: &[u8],
        mut on_record: impl FnMut(Record<'_>),
    ) -> Result<(), DecodeError> {
        let mut sink = |record: sink::Record<'_>| {
            on_record(Record::from_sink(&record));
            0
        };
        self.chunks
            .quick_scan(chunk_index, data, Filter::default(), Some(&mut sink))
    }
}

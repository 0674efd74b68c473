//! The `repr(C)` record types of the 0.3.0 ABI (`trace_decoder_types.h`).
//!
//! Field order, sizes and bit positions follow `spec/layout.json` exactly; the layout tests at
//! the bottom pin every size and offset. C bit-fields are stored as plain integers here and
//! reached through accessors, so no Rust code depends on compiler bit-field rules.

use std::ffi::c_char;

/// `rocprofiler_thread_trace_decoder_pc_t`: `code_object_id == 0` means `address` is a raw
/// virtual address; otherwise it is an offset inside that code object.
#[doc(alias = "rocprofiler_thread_trace_decoder_pc_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pc {
    pub address: u64,
    pub code_object_id: u64,
}

impl Pc {
    pub const NONE: Pc = Pc {
        address: 0,
        code_object_id: 0,
    };

    pub const fn new(address: u64, code_object_id: u64) -> Self {
        Pc {
            address,
            code_object_id,
        }
    }
}

/// `rocprofiler_thread_trace_decoder_perfevent_t`.
///
/// cbindgen:field-names=[time, events0, events1, events2, events3, CU, bank]
#[doc(alias = "rocprofiler_thread_trace_decoder_perfevent_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfEvent {
    pub time: i64,
    pub events0: u16,
    pub events1: u16,
    pub events2: u16,
    pub events3: u16,
    pub cu: u8,
    pub bank: u8,
}

/// `rocprofiler_thread_trace_decoder_occupancy_t`. The C bit-fields
/// `start:1 me_id:3 pipe_id:4 is_ext:1 workgroup_id:7 cluster_id:5 _rsvd:11` live in `bits`.
#[doc(alias = "rocprofiler_thread_trace_decoder_occupancy_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    pub pc: Pc,
    pub time: u64,
    pub reserved: u8,
    pub cu: u8,
    pub simd: u8,
    pub wave_id: u8,
    #[cfg(not(cbindgen))]
    pub bits: u32,
    /// cbindgen:bitfield=1
    #[cfg(cbindgen)]
    pub start: u32,
    /// cbindgen:bitfield=3
    #[cfg(cbindgen)]
    pub me_id: u32,
    /// cbindgen:bitfield=4
    #[cfg(cbindgen)]
    pub pipe_id: u32,
    /// cbindgen:bitfield=1
    #[cfg(cbindgen)]
    pub is_ext: u32,
    /// cbindgen:bitfield=7
    #[cfg(cbindgen)]
    pub workgroup_id: u32,
    /// cbindgen:bitfield=5
    #[cfg(cbindgen)]
    pub cluster_id: u32,
    /// cbindgen:bitfield=11
    #[cfg(cbindgen)]
    pub _rsvd: u32,
}

/// Identity and flags of one occupancy start/end, packed by [`OccupancyFlags::pack`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OccupancyFlags {
    pub start: bool,
    pub me_id: u8,
    pub pipe_id: u8,
    pub is_ext: bool,
    pub workgroup_id: u8,
    pub cluster_id: u8,
}

impl OccupancyFlags {
    pub fn pack(self) -> u32 {
        (self.start as u32)
            | ((self.me_id as u32 & 0x7) << 1)
            | ((self.pipe_id as u32 & 0xF) << 4)
            | ((self.is_ext as u32) << 8)
            | ((self.workgroup_id as u32 & 0x7F) << 9)
            | ((self.cluster_id as u32 & 0x1F) << 16)
    }

    pub fn unpack(bits: u32) -> Self {
        OccupancyFlags {
            start: bits & 1 != 0,
            me_id: ((bits >> 1) & 0x7) as u8,
            pipe_id: ((bits >> 4) & 0xF) as u8,
            is_ext: (bits >> 8) & 1 != 0,
            workgroup_id: ((bits >> 9) & 0x7F) as u8,
            cluster_id: ((bits >> 16) & 0x1F) as u8,
        }
    }
}

impl Occupancy {
    /// The record of a wave start or end at `time` in slot `wave_id` of `cu`/`simd`.
    #[inline(always)]
    pub fn new(pc: Pc, time: i64, cu: u8, simd: u8, wave_id: u8, flags: OccupancyFlags) -> Self {
        Occupancy {
            pc,
            time: time as u64,
            reserved: 0,
            cu,
            simd,
            wave_id,
            bits: flags.pack(),
        }
    }

    pub fn flags(&self) -> OccupancyFlags {
        OccupancyFlags::unpack(self.bits)
    }

    pub fn is_start(&self) -> bool {
        self.bits & 1 != 0
    }
}

/// Wave timeline states (`rocprofiler_thread_trace_decoder_wstate_type_t`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveStateKind {
    Empty = 0,
    Idle = 1,
    Exec = 2,
    Wait = 3,
    Stall = 4,
}

/// `rocprofiler_thread_trace_decoder_wave_state_t`; `kind` (C: `type`) holds a [`WaveStateKind`].
///
/// cbindgen:field-names=[type, duration]
#[doc(alias = "rocprofiler_thread_trace_decoder_wave_state_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveState {
    pub kind: i32,
    pub duration: i32,
}

/// Instruction categories (`rocprofiler_thread_trace_decoder_inst_category_t`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    None = 0,
    Smem = 1,
    Salu = 2,
    Vmem = 3,
    Flat = 4,
    Lds = 5,
    Valu = 6,
    Jump = 7,
    Next = 8,
    Immed = 9,
    Context = 10,
    Message = 11,
    Bvh = 12,
}

impl Category {
    /// Every category, in numeric order (value = index).
    pub const ALL: [Category; 13] = [
        Category::None,
        Category::Smem,
        Category::Salu,
        Category::Vmem,
        Category::Flat,
        Category::Lds,
        Category::Valu,
        Category::Jump,
        Category::Next,
        Category::Immed,
        Category::Context,
        Category::Message,
        Category::Bvh,
    ];

    /// The category of a C value; `None` outside the enum.
    pub fn from_u8(value: u8) -> Option<Category> {
        Self::ALL.get(usize::from(value)).copied()
    }
}

/// `rocprofiler_thread_trace_decoder_inst_t`: `category:8 | stall:24` packed in `category_stall`.
#[doc(alias = "rocprofiler_thread_trace_decoder_inst_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inst {
    #[cfg(not(cbindgen))]
    pub category_stall: u32,
    /// cbindgen:bitfield=8
    #[cfg(cbindgen)]
    pub category: u32,
    /// cbindgen:bitfield=24
    #[cfg(cbindgen)]
    pub stall: u32,
    pub duration: i32,
    pub time: i64,
    pub pc: Pc,
}

impl Inst {
    pub fn new(category: u8, stall: u32, duration: i32, time: i64, pc: Pc) -> Self {
        Inst {
            category_stall: category as u32 | (stall << 8),
            duration,
            time,
            pc,
        }
    }

    pub fn category(&self) -> u8 {
        (self.category_stall & 0xFF) as u8
    }

    pub fn stall(&self) -> u32 {
        self.category_stall >> 8
    }

    pub fn set_category(&mut self, category: u8) {
        self.category_stall = (self.category_stall & !0xFF) | category as u32;
    }

    /// Stores the stall, truncated to the 24 bits the ABI has for it.
    pub fn set_stall(&mut self, stall: u32) {
        self.category_stall = (self.category_stall & 0xFF) | (stall << 8);
    }
}

/// `rocprofiler_thread_trace_decoder_wave_t`; the arrays belong to the decoder and are valid
/// only during the callback that delivers the wave.
#[doc(alias = "rocprofiler_thread_trace_decoder_wave_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Wave {
    pub cu: u8,
    pub simd: u8,
    pub wave_id: u8,
    pub contexts: u8,
    pub dispatcher: u8,
    pub workgroup_id: u8,
    pub cluster_id: u8,
    pub reserved: u8,
    pub size: u64,
    pub begin_time: i64,
    pub end_time: i64,
    pub timeline_size: u64,
    pub instructions_size: u64,
    pub timeline_array: *const WaveState,
    pub instructions_array: *const Inst,
}

/// `rocprofiler_thread_trace_decoder_realtime_t`.
#[doc(alias = "rocprofiler_thread_trace_decoder_realtime_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Realtime {
    pub shader_clock: i64,
    pub realtime_clock: u64,
    pub reserved: u64,
}

/// `rocprofiler_thread_trace_decoder_shaderdata_t`.
#[doc(alias = "rocprofiler_thread_trace_decoder_shaderdata_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShaderData {
    pub time: i64,
    pub value: u64,
    pub cu: u8,
    pub simd: u8,
    pub wave_id: u8,
    pub flags: u8,
    pub reserved: u32,
}

/// `rocprofiler_thread_trace_decoder_inst_other_simd_t`.
#[doc(alias = "rocprofiler_thread_trace_decoder_inst_other_simd_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstOtherSimd {
    pub size: u64,
    pub time: i64,
    pub cycles: u16,
    pub wgp: u8,
    pub category: u8,
}

/// `rocprofiler_thread_trace_decoder_marker_t`; `name` and `source_location` are valid only
/// during the callback.
#[doc(alias = "rocprofiler_thread_trace_decoder_marker_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Marker {
    pub size: u64,
    pub shaderdata: ShaderData,
    pub kernel_entry: Pc,
    pub code_object_id: u64,
    pub name: *const c_char,
    pub source_location: *const c_char,
    pub marker_id: u32,
    pub record_kind: u32,
    pub marker_kind: u32,
    pub marker_flags: u32,
    pub payload_index: u32,
    pub payload_count: u32,
    pub delay: i32,
    pub reserved: u32,
}

/// The `cluster_barrier` member of [`EventPayload`].
#[doc(alias = "rocprofiler_thread_trace_decoder_cluster_barrier_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterBarrier {
    pub cluster_id: i32,
    pub barrier_id: i32,
}

/// `rocprofiler_thread_trace_decoder_event_payload_t`.
#[doc(alias = "rocprofiler_thread_trace_decoder_event_payload_t")]
#[repr(C)]
#[derive(Clone, Copy)]
pub union EventPayload {
    pub raw: u64,
    pub code_object_id: u64,
    pub cluster_barrier: ClusterBarrier,
}

impl Default for EventPayload {
    fn default() -> Self {
        EventPayload { raw: 0 }
    }
}

impl std::fmt::Debug for EventPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: every member is plain data covering the same 8 bytes.
        write!(f, "EventPayload({:#x})", unsafe { self.raw })
    }
}

/// Event kinds (`rocprofiler_thread_trace_decoder_event_type_t`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    None = 0,
    CsPartialFlush = 1,
    BottomOfPipeTs = 2,
    SaveContext = 3,
    DispatchEnd = 4,
    CacheFlush = 5,
    PacketLoss = 6,
    CodeObjectLoad = 7,
    CodeObjectUnload = 8,
    TtStallBegin = 9,
    TtStallEnd = 10,
    TtFlush = 11,
    DidtStallBegin = 12,
    DidtStallEnd = 13,
    ClusterBarrier = 14,
    Reserved = 15,
    GcRinse = 16,
    SpmSample = 17,
}

pub const EVENT_FLAG_PER_PIPE: u16 = 1;
pub const EVENT_FLAG_BOP: u16 = 2;

/// `rocprofiler_thread_trace_decoder_event_t`; `kind` (C: `type`) holds an [`EventKind`] value.
///
/// cbindgen:field-names=[size, time, type, me_id, pipe_id, flags, payload, byte_offset]
#[doc(alias = "rocprofiler_thread_trace_decoder_event_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Event {
    pub size: u64,
    pub time: i64,
    pub kind: u32,
    pub me_id: u8,
    pub pipe_id: u8,
    pub flags: u16,
    pub payload: EventPayload,
    pub byte_offset: u64,
}

pub const DISPATCH_FLAG_SCALAR_CACHE_INVALIDATE: i32 = 1;
pub const DISPATCH_FLAG_VECTOR_CACHE_INVALIDATE: i32 = 2;
pub const DISPATCH_FLAG_IS_CTX_RESTORE: i32 = 4;
pub const DISPATCH_FLAG_SCRATCH_ENABLED: i32 = 8;
pub const DISPATCH_FLAG_REALTIME_TS: i32 = 16;

/// `rocprofiler_thread_trace_decoder_dispatch_t`.
#[doc(alias = "rocprofiler_thread_trace_decoder_dispatch_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dispatch {
    pub size: u64,
    pub time: i64,
    pub me_id: u8,
    pub pipe_id: u8,
    pub user_sgprs: u16,
    pub flags: i32,
    pub vgprs: u32,
    pub sgprs: u32,
    pub lds_size: u32,
    pub thread_dim_x: u32,
    pub thread_dim_y: u32,
    pub thread_dim_z: u32,
    pub dispatch_pkt_addr: u64,
    pub byte_offset: u64,
    pub entry_point: Pc,
}

/// `rocprofiler_thread_trace_decoder_record_request_t`.
///
/// cbindgen:field-names=[size, type, flags]
#[doc(alias = "rocprofiler_thread_trace_decoder_record_request_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordRequest {
    pub size: u64,
    pub kind: u32,
    pub flags: u32,
}

pub const RECORD_REQUEST_FLAG_IMMEDIATE: u32 = 1;

/// `rocprofiler_thread_trace_decoder_record_filter_t`.
#[doc(alias = "rocprofiler_thread_trace_decoder_record_filter_t")]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RecordFilter {
    pub size: u64,
    pub records: *const RecordRequest,
    pub record_count: u64,
}

impl PerfEvent {
    /// A sample of one CU's counter bank: its four counters (all 0 in an empty sample).
    pub fn new(
        time: i64,
        cu: u8,
        bank: u8,
        [events0, events1, events2, events3]: [u16; 4],
    ) -> Self {
        PerfEvent {
            time,
            events0,
            events1,
            events2,
            events3,
            cu,
            bank,
        }
    }
}

impl Realtime {
    pub fn new(shader_clock: i64, realtime_clock: u64) -> Self {
        Realtime {
            shader_clock,
            realtime_clock,
            reserved: 0,
        }
    }
}

impl ShaderData {
    pub fn new(time: i64, value: u64, cu: u8, simd: u8, wave_id: u8, flags: u8) -> Self {
        ShaderData {
            time,
            value,
            cu,
            simd,
            wave_id,
            flags,
            reserved: 0,
        }
    }
}

impl Event {
    /// `payload` is the union's 8 bytes (a code object id, or a cluster barrier's two ids).
    pub fn new(
        kind: EventKind,
        time: i64,
        me_id: u8,
        pipe_id: u8,
        flags: u16,
        payload: u64,
        byte_offset: u64,
    ) -> Self {
        Event {
            size: std::mem::size_of::<Event>() as u64,
            time,
            kind: kind as u32,
            me_id,
            pipe_id,
            flags,
            payload: EventPayload { raw: payload },
            byte_offset,
        }
    }
}

/// Every record type, declared once: its C code, its C name, the payload a delivery carries and,
/// where the safe API shows it through a view, that view. `for_each_record_kind!(m)` hands the
/// list to the macro `m`; [`RecordKind`], the sink's and the safe API's `Record` enums and the C
/// callback's dispatch are generated from it, so a new record type is one line here (and its
/// checks, which the compiler then asks for).
///
/// Payload shapes: `inline` travels in the C callback's pointer itself (with a count of 0),
/// `value` is one plain value, `one` one record by reference, `batch` a slice of records.
macro_rules! for_each_record_kind {
    ($apply:ident) => {
        $apply! {
            /// The GFXIP major of the trace (9, 10, 11 or 12), once per parse.
            Gfxip = 0, "GFXIP": inline u32;
            Occupancy = 1, "OCCUPANCY": batch Occupancy;
            PerfEvent = 2, "PERFEVENT": batch PerfEvent;
            /// One wave with its instructions and timeline.
            Wave = 3, "WAVE": one Wave => WaveView;
            Info = 4, "INFO": value InfoCode;
            Event = 5, "EVENT": one Event;
            ShaderData = 6, "SHADERDATA": batch ShaderData;
            Realtime = 7, "REALTIME": batch Realtime;
            /// The realtime clock's frequency in Hz, once per parse when the trace states it.
            RtFrequency = 8, "RT_FREQUENCY": value u64;
            InstOtherSimd = 9, "INST_OTHER_SIMD": batch InstOtherSimd;
            Dispatch = 10, "DISPATCH": one Dispatch;
            Marker = 11, "MARKER": batch Marker => MarkerViews;
        }
    };
}
pub(crate) use for_each_record_kind;

/// The payload type of a delivery of one shape, borrowed for `'a` (see [`for_each_record_kind`]).
macro_rules! record_payload {
    (inline $a:lifetime $t:ty) => { $t };
    (value $a:lifetime $t:ty) => { $t };
    (one $a:lifetime $t:ty) => { &$a $t };
    (batch $a:lifetime $t:ty) => { &$a [$t] };
}
pub(crate) use record_payload;

macro_rules! record_kind_enum {
    ($($(#[$doc:meta])* $kind:ident = $code:literal, $c_name:literal:
        $shape:ident $payload:ty $(=> $view:ident)?;)*) => {
        /// Record types (`rocprofiler_thread_trace_decoder_record_type_t`).
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum RecordKind {
            $($kind = $code,)*
        }

        impl RecordKind {
            /// Every type in the order of its code (0, 1, ...).
            pub const ALL: [RecordKind; RecordKind::COUNT] = [$(RecordKind::$kind,)*];
            pub const COUNT: usize = [$(RecordKind::$kind,)*].len();

            /// The suffix of the C enum's name (`ROCPROFILER_THREAD_TRACE_DECODER_RECORD_<name>`).
            pub fn c_name(self) -> &'static str {
                match self {
                    $(RecordKind::$kind => $c_name,)*
                }
            }
        }
    };
}
for_each_record_kind!(record_kind_enum);

impl RecordKind {
    pub fn from_raw(raw: u32) -> Option<Self> {
        Self::ALL.get(raw as usize).copied()
    }
}

/// Info codes (`rocprofiler_thread_trace_decoder_info_t`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoCode {
    None = 0,
    DataLost = 1,
    StitchIncomplete = 2,
    WaveIncomplete = 3,
}

/// Status codes (`rocprofiler_thread_trace_decoder_status_t`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success = 0,
    Error = 1,
    OutOfResources = 2,
    InvalidArgument = 3,
    InvalidShaderData = 4,
    NotImplemented = 5,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn record_kinds_are_numbered_in_order() {
        for (code, kind) in RecordKind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, code, "{kind:?}");
            assert_eq!(RecordKind::from_raw(code as u32), Some(*kind));
        }
        assert_eq!(RecordKind::from_raw(RecordKind::COUNT as u32), None);
    }

    #[test]
    fn sizes_match_the_0_3_0_layout() {
        assert_eq!((size_of::<Pc>(), align_of::<Pc>()), (16, 8));
        assert_eq!((size_of::<PerfEvent>(), align_of::<PerfEvent>()), (24, 8));
        assert_eq!((size_of::<Occupancy>(), align_of::<Occupancy>()), (32, 8));
        assert_eq!((size_of::<WaveState>(), align_of::<WaveState>()), (8, 4));
        assert_eq!((size_of::<Inst>(), align_of::<Inst>()), (32, 8));
        assert_eq!((size_of::<Wave>(), align_of::<Wave>()), (64, 8));
        assert_eq!((size_of::<Realtime>(), align_of::<Realtime>()), (24, 8));
        assert_eq!((size_of::<ShaderData>(), align_of::<ShaderData>()), (24, 8));
        assert_eq!(
            (size_of::<InstOtherSimd>(), align_of::<InstOtherSimd>()),
            (24, 8)
        );
        assert_eq!((size_of::<Marker>(), align_of::<Marker>()), (104, 8));
        assert_eq!(
            (size_of::<EventPayload>(), align_of::<EventPayload>()),
            (8, 8)
        );
        assert_eq!((size_of::<Event>(), align_of::<Event>()), (40, 8));
        assert_eq!((size_of::<Dispatch>(), align_of::<Dispatch>()), (80, 8));
        assert_eq!(
            (size_of::<RecordRequest>(), align_of::<RecordRequest>()),
            (16, 8)
        );
        assert_eq!(
            (size_of::<RecordFilter>(), align_of::<RecordFilter>()),
            (24, 8)
        );
    }

    #[test]
    fn offsets_match_the_0_3_0_layout() {
        assert_eq!(offset_of!(Occupancy, time), 16);
        assert_eq!(offset_of!(Occupancy, wave_id), 27);
        assert_eq!(offset_of!(Occupancy, bits), 28);
        assert_eq!(offset_of!(Wave, size), 8);
        assert_eq!(offset_of!(Wave, begin_time), 16);
        assert_eq!(offset_of!(Wave, instructions_array), 56);
        assert_eq!(offset_of!(Marker, kernel_entry), 32);
        assert_eq!(offset_of!(Marker, name), 56);
        assert_eq!(offset_of!(Marker, delay), 96);
        assert_eq!(offset_of!(Event, kind), 16);
        assert_eq!(offset_of!(Event, flags), 22);
        assert_eq!(offset_of!(Event, byte_offset), 32);
        assert_eq!(offset_of!(Dispatch, flags), 20);
        assert_eq!(offset_of!(Dispatch, dispatch_pkt_addr), 48);
        assert_eq!(offset_of!(Dispatch, entry_point), 64);
        assert_eq!(offset_of!(InstOtherSimd, category), 19);
        assert_eq!(offset_of!(ShaderData, reserved), 20);
    }

    #[test]
    fn occupancy_bits_follow_the_c_bitfield_positions() {
        let f = OccupancyFlags {
            start: true,
            me_id: 1,
            pipe_id: 2,
            is_ext: true,
            workgroup_id: 17,
            cluster_id: 7,
        };
        let bits = f.pack();
        assert_eq!(bits & 1, 1);
        assert_eq!((bits >> 1) & 7, 1);
        assert_eq!((bits >> 4) & 0xF, 2);
        assert_eq!((bits >> 8) & 1, 1);
        assert_eq!((bits >> 9) & 0x7F, 17);
        assert_eq!((bits >> 16) & 0x1F, 7);
        assert_eq!(OccupancyFlags::unpack(bits), f);
    }

    #[test]
    fn inst_packs_category_and_stall() {
        let mut i = Inst::new(Category::Immed as u8, 1699, 1700, 28182, Pc::NONE);
        assert_eq!(i.category(), 9);
        assert_eq!(i.stall(), 1699);
        i.set_stall(5);
        i.set_category(Category::Valu as u8);
        assert_eq!((i.category(), i.stall()), (6, 5));
    }
}

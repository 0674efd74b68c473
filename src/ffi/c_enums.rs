//! The C enums of the 0.3.0 headers, spelled exactly as C sees them.
//!
//! These are the source of the enum typedefs in the generated headers. Rust code uses the
//! idiomatic enums of `records`; the tests below keep both in step.
#![allow(non_camel_case_types)]

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_info_t {
    ROCPROFILER_THREAD_TRACE_DECODER_INFO_NONE = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_INFO_DATA_LOST = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_INFO_STITCH_INCOMPLETE = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_INFO_WAVE_INCOMPLETE = 3,
    ROCPROFILER_THREAD_TRACE_DECODER_INFO_LAST = 4,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_wstate_type_t {
    ROCPROFILER_THREAD_TRACE_DECODER_WSTATE_EMPTY = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_WSTATE_IDLE = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_WSTATE_EXEC = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_WSTATE_WAIT = 3,
    ROCPROFILER_THREAD_TRACE_DECODER_WSTATE_STALL = 4,
    ROCPROFILER_THREAD_TRACE_DECODER_WSTATE_LAST = 5,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_inst_category_t {
    ROCPROFILER_THREAD_TRACE_DECODER_INST_NONE = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_SMEM = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_SALU = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_VMEM = 3,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_FLAT = 4,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_LDS = 5,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_VALU = 6,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_JUMP = 7,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_NEXT = 8,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_IMMED = 9,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_CONTEXT = 10,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_MESSAGE = 11,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_BVH = 12,
    ROCPROFILER_THREAD_TRACE_DECODER_INST_LAST = 13,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_shaderdata_flags_t {
    ROCPROFILER_THREAD_TRACE_DECODER_SHADERDATA_FLAGS_IMM = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_SHADERDATA_FLAGS_PRIV = 1,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_record_type_t {
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_GFXIP = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_OCCUPANCY = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_PERFEVENT = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_WAVE = 3,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_INFO = 4,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_EVENT = 5,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_SHADERDATA = 6,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_REALTIME = 7,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_RT_FREQUENCY = 8,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_INST_OTHER_SIMD = 9,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_DISPATCH = 10,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_MARKER = 11,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_LAST = 12,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_marker_record_kind_t {
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_RECORD_HEADER = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_RECORD_PAYLOAD = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_RECORD_LAST = 2,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_marker_kind_t {
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_KIND_UNKNOWN = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_KIND_FUNCTION = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_KIND_USER_SCOPE = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_KIND_POINT = 3,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_KIND_LAST = 4,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_marker_flags_t {
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_FLAGS_NONE = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_FLAGS_EXIT_PREVIOUS = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_FLAGS_ENTER = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_MARKER_FLAGS_NEW_WAVE = 4,
}

pub const ROCPROFILER_THREAD_TRACE_DECODER_MARKER_FLAGS_LAST: u32 = 4;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_event_type_t {
    ROCPROF_TRACE_DECODER_EVENT_NONE = 0,
    ROCPROF_TRACE_DECODER_EVENT_CS_PARTIAL_FLUSH = 1,
    ROCPROF_TRACE_DECODER_EVENT_BOTTOM_OF_PIPE_TS = 2,
    ROCPROF_TRACE_DECODER_EVENT_SAVE_CONTEXT = 3,
    ROCPROF_TRACE_DECODER_EVENT_DISPATCH_END = 4,
    ROCPROF_TRACE_DECODER_EVENT_CACHE_FLUSH = 5,
    ROCPROF_TRACE_DECODER_EVENT_PACKET_LOSS = 6,
    ROCPROF_TRACE_DECODER_EVENT_CODE_OBJECT_LOAD = 7,
    ROCPROF_TRACE_DECODER_EVENT_CODE_OBJECT_UNLOAD = 8,
    ROCPROF_TRACE_DECODER_EVENT_TT_STALL_BEGIN = 9,
    ROCPROF_TRACE_DECODER_EVENT_TT_STALL_END = 10,
    ROCPROF_TRACE_DECODER_EVENT_TT_FLUSH = 11,
    ROCPROF_TRACE_DECODER_EVENT_DIDT_STALL_BEGIN = 12,
    ROCPROF_TRACE_DECODER_EVENT_DIDT_STALL_END = 13,
    ROCPROF_TRACE_DECODER_EVENT_CLUSTER_BARRIER = 14,
    ROCPROF_TRACE_DECODER_EVENT_RESERVED = 15,
    ROCPROF_TRACE_DECODER_EVENT_GC_RINSE = 16,
    ROCPROF_TRACE_DECODER_EVENT_SPM_SAMPLE = 17,
    ROCPROF_TRACE_DECODER_EVENT_LAST = 18,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_event_flags_t {
    ROCPROF_TRACE_DECODER_EVENT_FLAGS_NONE = 0,
    ROCPROF_TRACE_DECODER_EVENT_FLAGS_PER_PIPE = 1,
    ROCPROF_TRACE_DECODER_EVENT_FLAGS_BOP = 2,
}

pub const ROCPROF_TRACE_DECODER_EVENT_FLAGS_LAST: u32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_dispatch_flags_t {
    ROCPROFILER_THREAD_TRACE_DECODER_DISPATCH_FLAGS_NONE = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_DISPATCH_FLAGS_SCALAR_CACHE_INVALIDATE = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_DISPATCH_FLAGS_VECTOR_CACHE_INVALIDATE = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_DISPATCH_FLAGS_IS_CTX_RESTORE = 4,
    ROCPROFILER_THREAD_TRACE_DECODER_DISPATCH_FLAGS_SCRATCH_ENABLED = 8,
    ROCPROFILER_THREAD_TRACE_DECODER_DISPATCH_FLAGS_REALTIME_TS = 16,
}

pub const ROCPROFILER_THREAD_TRACE_DECODER_DISPATCH_FLAGS_LAST: u32 = 16;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_record_request_flags_t {
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_REQUEST_FLAGS_NONE = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_RECORD_REQUEST_FLAGS_IMMEDIATE = 1,
}

pub const ROCPROFILER_THREAD_TRACE_DECODER_RECORD_REQUEST_FLAGS_LAST: u32 = 1;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Category, EventKind, InfoCode, RecordKind, WaveStateKind};

    #[test]
    fn c_enums_agree_with_the_rust_enums() {
        use rocprofiler_thread_trace_decoder_event_type_t as E;
        use rocprofiler_thread_trace_decoder_inst_category_t as C;
        use rocprofiler_thread_trace_decoder_record_type_t as R;
        assert_eq!(
            C::ROCPROFILER_THREAD_TRACE_DECODER_INST_SMEM as u8,
            Category::Smem as u8
        );
        assert_eq!(
            C::ROCPROFILER_THREAD_TRACE_DECODER_INST_VALU as u8,
            Category::Valu as u8
        );
        assert_eq!(
            C::ROCPROFILER_THREAD_TRACE_DECODER_INST_IMMED as u8,
            Category::Immed as u8
        );
        assert_eq!(
            C::ROCPROFILER_THREAD_TRACE_DECODER_INST_BVH as u8,
            Category::Bvh as u8
        );
        assert_eq!(
            R::ROCPROFILER_THREAD_TRACE_DECODER_RECORD_EVENT as u32,
            RecordKind::Event as u32
        );
        assert_eq!(
            R::ROCPROFILER_THREAD_TRACE_DECODER_RECORD_MARKER as u32,
            RecordKind::Marker as u32
        );
        assert_eq!(
            R::ROCPROFILER_THREAD_TRACE_DECODER_RECORD_LAST as usize,
            RecordKind::COUNT
        );
        assert_eq!(
            E::ROCPROF_TRACE_DECODER_EVENT_SPM_SAMPLE as u32,
            EventKind::SpmSample as u32
        );
        assert_eq!(
            E::ROCPROF_TRACE_DECODER_EVENT_CODE_OBJECT_LOAD as u32,
            EventKind::CodeObjectLoad as u32
        );
        assert_eq!(
            rocprofiler_thread_trace_decoder_info_t::ROCPROFILER_THREAD_TRACE_DECODER_INFO_WAVE_INCOMPLETE as u32,
            InfoCode::WaveIncomplete as u32
        );
        assert_eq!(
            rocprofiler_thread_trace_decoder_wstate_type_t::ROCPROFILER_THREAD_TRACE_DECODER_WSTATE_STALL as i32,
            WaveStateKind::Stall as i32
        );
    }
}

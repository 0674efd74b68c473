//! C-side spellings of values that cross the boundary as plain integers.
//!
//! Enum-typed parameters arrive as `int` from C, and C may pass any value; receiving them as
//! Rust enums would make out-of-range values undefined behaviour, so the functions take these
//! transparent integers. The header generator renames them to the C enum typedefs.

use std::ffi::{c_char, c_void};

use crate::records::Pc;

/// `rocprofiler_thread_trace_decoder_status_t` as returned to C (a plain `int`).
pub type StatusCode = i32;

/// `rocprofiler_thread_trace_decoder_record_type_t` as passed to the trace callback.
pub type RecordTypeCode = i32;

#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rocprofiler_thread_trace_decoder_status_t {
    ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS = 0,
    ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR = 1,
    ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_OUT_OF_RESOURCES = 2,
    ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT = 3,
    ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA = 4,
    ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_NOT_IMPLEMENTED = 5,
    ROCPROFILER_THREAD_TRACE_DECODER_STATUS_LAST = 6,
}

/// A `rocprofiler_thread_trace_decoder_info_t` argument.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct InfoArg(pub i32);

/// A `rocprofiler_thread_trace_decoder_status_t` argument.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct StatusArg(pub i32);

/// `rocprof_trace_decoder_handle_t`, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handle {
    pub handle: u64,
}

/// `rocprof_trace_decoder_version_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Version {
    pub size: u64,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

/// `rocprof_trace_decoder_trace_callback_t` (NULL allowed where the API allows it).
pub type TraceCallback = Option<
    unsafe extern "C" fn(
        record_type_id: RecordTypeCode,
        trace_events: *mut c_void,
        trace_size: u64,
        userdata: *mut c_void,
    ) -> StatusCode,
>;

/// `rocprof_trace_decoder_se_data_callback_t`.
pub type SeDataCallback = Option<
    unsafe extern "C" fn(buffer: *mut *mut u8, buffer_size: *mut u64, userdata: *mut c_void) -> u64,
>;

/// `rocprof_trace_decoder_isa_callback_t` (the same type as [`crate::isa::callback::IsaCallback`]).
pub type IsaCallback = Option<
    unsafe extern "C" fn(
        instruction: *mut c_char,
        memory_size: *mut u64,
        size: *mut u64,
        address: Pc,
        userdata: *mut c_void,
    ) -> StatusCode,
>;

/// A client pointer stored in a handle and handed back to the client's callbacks. The client
/// owns what it points to; the decoder never dereferences it.
#[derive(Clone, Copy, Debug)]
pub struct UserData(pub *mut c_void);

// SAFETY: the pointer is only passed back to the client, which the API makes responsible for
// its thread safety.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

/// A trace callback known to be non-NULL.
pub type TraceFn = crate::sink::RecordCallback;

/// An SE-data callback known to be non-NULL.
pub type SeDataFn = unsafe extern "C" fn(*mut *mut u8, *mut u64, *mut c_void) -> u64;

/// An ISA callback known to be non-NULL.
pub use crate::isa::callback::IsaCallback as IsaFn;

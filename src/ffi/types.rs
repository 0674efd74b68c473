//! C-side spellings of values that cross the boundary as plain integers.
//!
//! Enum-typed parameters arrive as `int` from C, and C may pass any value; receiving them as
//! Rust enums would make out-of-range values undefined behaviour, so the functions take these
//! transparent integers. The header generator renames them to the C enum typedefs.

use std::ffi::c_void;

/// `rocprofiler_thread_trace_decoder_status_t` as returned to C.
pub type StatusCode = i32;

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

/// `rocprof_trace_decoder_trace_callback_t`.
pub type TraceCallback = unsafe extern "C" fn(i32, *mut c_void, u64, *mut c_void) -> StatusCode;

/// `rocprof_trace_decoder_se_data_callback_t`.
pub type SeDataCallback = unsafe extern "C" fn(*mut *mut u8, *mut u64, *mut c_void) -> u64;

pub use crate::isa::callback::IsaCallback;

/// A client pointer stored in a handle and handed back to the client's callbacks. The client
/// owns what it points to; the decoder never dereferences it.
#[derive(Clone, Copy, Debug)]
pub struct UserData(pub *mut c_void);

// SAFETY: the pointer is only passed back to the client, which the API makes responsible for
// its thread safety.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

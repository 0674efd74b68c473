//! `quick_scan` and `build_standalone`.

use std::ffi::c_void;

use super::types::{Handle, StatusCode, TraceCallback};
use crate::records::Status;

/// Scans a trace chunk for dispatches and events without decoding waves.
///
/// # Safety
/// `data` is NULL or points to `data_size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_quick_scan(
    handle: Handle,
    chunk_index: u64,
    data: *const c_void,
    data_size: u64,
    trace_callback: TraceCallback,
    userdata: *mut c_void,
) -> StatusCode {
    let _ = (handle, chunk_index, trace_callback, userdata);
    if data.is_null() || data_size == 0 {
        return Status::Success as i32;
    }
    Status::NotImplemented as i32
}

/// Cuts a self-contained trace for `[offset_begin, offset_end)` of a chunk.
///
/// # Safety
/// `data` points to `data_size` readable bytes, `data_out` to `*size_out` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_build_standalone(
    handle: Handle,
    chunk_index: u64,
    data: *const c_void,
    data_size: u64,
    offset_begin: u64,
    offset_end: u64,
    data_out: *mut c_void,
    size_out: *mut u64,
) -> StatusCode {
    let _ = (handle, chunk_index);
    let range_ok =
        offset_begin.checked_add(8).is_some_and(|b| b < offset_end) && offset_end <= data_size;
    if data.is_null() || data_size <= 8 || data_out.is_null() || size_out.is_null() || !range_ok {
        return Status::InvalidArgument as i32;
    }
    Status::NotImplemented as i32
}

//! `get_info_string`, `get_status_string`, `get_version`.

use std::ffi::{c_char, CStr};

use super::boundary::{ffi_boundary, OutPtr};
use super::types::{InfoArg, StatusArg, StatusCode, Version};
use crate::records::Status;

const UNKNOWN_INFO: &CStr = c"Unknown info parameter.";
const UNKNOWN_STATUS: &CStr = c"STATUS_UNKNOWN";

/// The texts are part of the API: identical, byte for byte, to the reference's.
fn info_text(info: i32) -> &'static CStr {
    match info {
        0 => c"NONE",
        1 => c"Data Lost: The profiler dropped part of the trace due to bandwidth limitations.",
        2 => c"Stitch Incomplete: The parser could not fully match a trace token to the underlying disassembly.",
        3 => c"Wave incomplete: The trace was cutoff before all waves ended.",
        4 => c"INFO_LAST",
        _ => UNKNOWN_INFO,
    }
}

fn status_text(status: i32) -> &'static CStr {
    match status {
        0 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS",
        1 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR",
        2 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_OUT_OF_RESOURCES",
        3 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT",
        4 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA",
        5 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_NOT_IMPLEMENTED",
        6 => c"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_LAST",
        _ => UNKNOWN_STATUS,
    }
}

/// Returns a static description of an info code; never NULL.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_get_info_string(info: InfoArg) -> *const c_char {
    ffi_boundary!(UNKNOWN_INFO, { info_text(info.0) })
}

/// Returns the name of a status code; never NULL.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_get_status_string(status: StatusArg) -> *const c_char {
    ffi_boundary!(UNKNOWN_STATUS, { status_text(status.0) })
}

/// Writes the library version (0.3.0) and the struct size.
///
/// # Safety
/// `version` is NULL or points to a writable `rocprof_trace_decoder_version_t`.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_get_version(version: *mut Version) -> StatusCode {
    ffi_boundary!(Status::Error, {
        let Some(mut version) = OutPtr::new(version) else {
            return Status::InvalidArgument;
        };
        version.write(Version {
            size: std::mem::size_of::<Version>() as u64,
            major: 0,
            minor: 3,
            patch: 0,
        });
        Status::Success
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_have_the_documented_lengths() {
        for (code, len) in [(0, 4), (1, 79), (2, 96), (3, 61), (4, 9), (-1, 23), (5, 23)] {
            assert_eq!(info_text(code).count_bytes(), len, "info {code}");
        }
        assert_eq!(status_text(7), c"STATUS_UNKNOWN");
        assert_eq!(status_text(-1), c"STATUS_UNKNOWN");
    }
}

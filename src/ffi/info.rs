//! `get_info_string`, `get_status_string`, `get_version`.

use std::ffi::c_char;

use super::types::{InfoArg, StatusArg, StatusCode, Version};
use crate::records::Status;

/// The texts are part of the API: identical, byte for byte, to the reference's.
fn info_text(info: i32) -> &'static [u8] {
    match info {
        0 => b"NONE\0",
        1 => b"Data Lost: The profiler dropped part of the trace due to bandwidth limitations.\0",
        2 => b"Stitch Incomplete: The parser could not fully match a trace token to the underlying disassembly.\0",
        3 => b"Wave incomplete: The trace was cutoff before all waves ended.\0",
        4 => b"INFO_LAST\0",
        _ => b"Unknown info parameter.\0",
    }
}

fn status_text(status: i32) -> &'static [u8] {
    match status {
        0 => b"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS\0",
        1 => b"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR\0",
        2 => b"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_OUT_OF_RESOURCES\0",
        3 => b"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT\0",
        4 => b"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA\0",
        5 => b"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_NOT_IMPLEMENTED\0",
        6 => b"ROCPROFILER_THREAD_TRACE_DECODER_STATUS_LAST\0",
        _ => b"STATUS_UNKNOWN\0",
    }
}

/// Returns a static description of an info code; never NULL.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_get_info_string(info: InfoArg) -> *const c_char {
    info_text(info.0).as_ptr().cast()
}

/// Returns the name of a status code; never NULL.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_get_status_string(status: StatusArg) -> *const c_char {
    status_text(status.0).as_ptr().cast()
}

/// Writes the library version (0.3.0) and the struct size.
///
/// # Safety
/// `version` is NULL or points to a writable `rocprof_trace_decoder_version_t`.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_get_version(version: *mut Version) -> StatusCode {
    if version.is_null() {
        return Status::InvalidArgument as i32;
    }
    version.write(Version {
        size: std::mem::size_of::<Version>() as u64,
        major: 0,
        minor: 3,
        patch: 0,
    });
    Status::Success as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_terminated_and_have_the_documented_lengths() {
        for (code, len) in [(0, 4), (1, 79), (2, 96), (3, 61), (4, 9), (-1, 23), (5, 23)] {
            let t = info_text(code);
            assert_eq!(t.last(), Some(&0));
            assert_eq!(t.len() - 1, len, "info {code}");
        }
        assert_eq!(status_text(7), b"STATUS_UNKNOWN\0");
        assert_eq!(status_text(-1), b"STATUS_UNKNOWN\0");
    }
}

//! `quick_scan` and `build_standalone`: argument checks and statuses in the documented order
//! (API.md §4.13–§4.14); the scanning itself is in `crate::scan`.

use std::ffi::c_void;

use super::boundary::{bytes, ffi_boundary, OutPtr};
use super::handle::lookup;
use super::parse::TraceCallbackSink;
use super::types::{Handle, StatusCode, TraceCallback};
use crate::error::ErrorKind;
use crate::records::Status;
use crate::scan::standalone;
use crate::sink::{ClientCallback, RecordSink};

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
    ffi_boundary!(Status::Error, {
        if data.is_null() || data_size == 0 {
            return Status::Success as StatusCode;
        }
        let Some(state) = lookup(handle) else {
            return Status::InvalidArgument as StatusCode;
        };
        let (chunks, filter) = {
            let config = state.read().unwrap_or_else(|e| e.into_inner());
            (config.scan.clone(), config.filter)
        };
        let Some(data) = bytes(data.cast(), data_size) else {
            return Status::InvalidArgument as StatusCode;
        };
        // SAFETY: the client's trace callback takes exactly these arguments (its C type).
        let mut sink = trace_callback.map(|callback| TraceCallbackSink {
            client: unsafe { ClientCallback::new(callback, userdata) },
        });
        let sink = sink.as_mut().map(|s| s as &mut dyn RecordSink);
        match chunks.quick_scan(chunk_index, data, filter, sink) {
            Ok(()) => Status::Success as StatusCode,
            Err(error) => quick_scan_status(error.kind),
        }
    })
}

/// The documented status of a chunk that could not be scanned; a client that stopped the scan
/// gets its own status back.
fn quick_scan_status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::StoppedByCallback(status) => status,
        ErrorKind::MissingPreviousChunk => Status::OutOfResources as StatusCode,
        ErrorKind::ChunkTooShort | ErrorKind::MissingCallback => {
            Status::InvalidArgument as StatusCode
        }
        // The scanner reports none of these.
        ErrorKind::UnknownHeader
        | ErrorKind::Truncated
        | ErrorKind::UnsupportedVersion(_)
        | ErrorKind::InvalidWaveSlot
        | ErrorKind::UnsupportedArch => Status::Error as StatusCode,
    }
}

/// Cuts a self-contained trace for `[offset_begin, offset_end)` of a chunk.
///
/// # Safety
/// `data` points to `data_size` readable bytes, `data_out` to `*size_out` writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
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
    ffi_boundary!(Status::Error, {
        let range_ok =
            offset_begin.checked_add(8).is_some_and(|b| b < offset_end) && offset_end <= data_size;
        let Some(mut size_out) = OutPtr::new(size_out) else {
            return Status::InvalidArgument;
        };
        if data.is_null() || data_size <= 8 || data_out.is_null() || !range_ok {
            return Status::InvalidArgument;
        }
        let Some(state) = lookup(handle) else {
            return Status::InvalidArgument;
        };
        let chunks = state.read().unwrap_or_else(|e| e.into_inner()).scan.clone();
        let Some(data) = bytes(data.cast(), data_size) else {
            return Status::InvalidArgument;
        };
        // The range checks above keep both offsets within `data`.
        let (begin, end) = (offset_begin as usize, offset_end as usize);
        let trace = match standalone::build(&chunks, chunk_index, data, begin, end) {
            Ok(trace) => trace,
            Err(error) => return standalone_status(error.kind),
        };
        let required = trace.size() as u64;
        if size_out.read() < required {
            size_out.write(required);
            return Status::OutOfResources;
        }
        // SAFETY: the caller guarantees `*size_out >= required` writable bytes at `data_out`.
        let out = std::slice::from_raw_parts_mut(data_out.cast::<u8>(), trace.size());
        trace.write_to(out);
        size_out.write(required);
        Status::Success
    })
}

/// The documented status of a standalone trace that could not be built.
fn standalone_status(kind: ErrorKind) -> Status {
    match kind {
        ErrorKind::MissingPreviousChunk => Status::InvalidArgument,
        ErrorKind::UnsupportedArch => Status::NotImplemented,
        // The standalone builder reports none of these.
        ErrorKind::UnknownHeader
        | ErrorKind::Truncated
        | ErrorKind::UnsupportedVersion(_)
        | ErrorKind::InvalidWaveSlot
        | ErrorKind::ChunkTooShort
        | ErrorKind::MissingCallback
        | ErrorKind::StoppedByCallback(_) => Status::Error,
    }
}

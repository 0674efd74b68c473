//! The handle table and the functions that configure a handle.
//!
//! Handles are ids of a `boundary::Registry`; each maps to the handle's state behind a
//! reader/writer lock: configuration takes the write side, `parse` holds the read side for its
//! whole run, so destroying a handle while another thread parses with it is safe.
//!
//! A callback of a parse may call back into the handle that is parsing. Taking that handle's
//! lock again on the same thread would deadlock, so those calls (settings, code objects, a nested
//! parse) return ERROR instead; destroying the handle needs no handle lock and is allowed.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, RwLock};

use super::boundary::{bytes, ffi_boundary, OutPtr, Registry};
use super::types::{Handle, IsaCallback, IsaFn, SeDataCallback, SeDataFn, StatusCode, UserData};
use crate::isa::codeobj::CodeObjectTable;
use crate::records::{
    RecordFilter, RecordKind, RecordRequest, Status, RECORD_REQUEST_FLAG_IMMEDIATE,
};
use crate::scan::chunks::ScanChunks;
use crate::sink::{Delivery, Filter};

/// What a handle remembers between calls.
#[derive(Default)]
pub struct HandleConfig {
    pub isa_callback: Option<(IsaFn, UserData)>,
    pub se_data_callback: Option<(SeDataFn, UserData)>,
    pub filter: Filter,
    /// Code objects for built-in disassembly, used by `parse` when no ISA callback is set. Its
    /// own lock lets `parse` (holding the handle's read side) use it mutably.
    pub code_objects: Mutex<CodeObjectTable>,
    /// `quick_scan` chunk states; shared so a scan waits for its predecessor without holding
    /// the handle's lock.
    pub scan: Arc<ScanChunks>,
}

pub type SharedHandle = Arc<RwLock<HandleConfig>>;

static HANDLES: Registry<RwLock<HandleConfig>> = Registry::new();

thread_local! {
    /// Handles with a `parse` running on this thread (their callbacks may call back in).
    static PARSING: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

fn parsing_here(handle: Handle) -> bool {
    PARSING.with(|parsing| parsing.borrow().contains(&handle.handle))
}

/// Marks a handle as parsing on this thread for as long as it lives.
pub struct ParseMark(u64);

impl ParseMark {
    /// `None` when this thread is already parsing with `handle` (a callback calling back in).
    pub fn enter(handle: Handle) -> Option<ParseMark> {
        if parsing_here(handle) {
            return None;
        }
        PARSING.with(|parsing| parsing.borrow_mut().push(handle.handle));
        Some(ParseMark(handle.handle))
    }
}

impl Drop for ParseMark {
    fn drop(&mut self) {
        PARSING.with(|parsing| parsing.borrow_mut().retain(|&h| h != self.0));
    }
}

/// The live state of `handle`, or `None` for an id that was never created or was destroyed.
pub fn lookup(handle: Handle) -> Option<SharedHandle> {
    HANDLES.get(handle.handle)
}

/// Runs `change` on the handle's configuration under its write lock.
fn configure(handle: Handle, change: impl FnOnce(&mut HandleConfig) -> Status) -> Status {
    match lookup(handle) {
        None => Status::InvalidArgument,
        Some(_) if parsing_here(handle) => Status::Error,
        Some(state) => {
            let mut config = state.write().unwrap_or_else(|e| e.into_inner());
            change(&mut config)
        }
    }
}

/// Creates a decoder handle.
///
/// # Safety
/// `handle` is NULL or points to a writable `rocprof_trace_decoder_handle_t`.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_create_handle(handle: *mut Handle) -> StatusCode {
    ffi_boundary!(Status::Error, {
        let Some(mut handle) = OutPtr::new(handle) else {
            return Status::InvalidArgument;
        };
        let id = HANDLES.insert(RwLock::new(HandleConfig::default()));
        handle.write(Handle { handle: id });
        Status::Success
    })
}

/// Destroys a handle; later calls with it return ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_destroy_handle(handle: Handle) -> StatusCode {
    ffi_boundary!(Status::Error, {
        match HANDLES.remove(handle.handle) {
            true => Status::Success,
            false => Status::InvalidArgument,
        }
    })
}

/// Sets (or, with NULL, clears) the ISA callback used by `parse`.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_set_isa_callback(
    handle: Handle,
    callback: IsaCallback,
    userdata: *mut std::ffi::c_void,
) -> StatusCode {
    ffi_boundary!(Status::Error, {
        configure(handle, |config| {
            config.isa_callback = callback.map(|cb| (cb, UserData(userdata)));
            Status::Success
        })
    })
}

/// Sets (or, with NULL, clears) the SE-data callback that `parse` pulls buffers from.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_set_se_data_callback(
    handle: Handle,
    callback: SeDataCallback,
    userdata: *mut std::ffi::c_void,
) -> StatusCode {
    ffi_boundary!(Status::Error, {
        configure(handle, |config| {
            config.se_data_callback = callback.map(|cb| (cb, UserData(userdata)));
            Status::Success
        })
    })
}

/// Validates a C record filter (API.md §4.11); NULL means the default filter.
///
/// # Safety
/// `filter` is NULL or points to a readable filter whose `records` array holds `record_count`
/// readable requests.
unsafe fn filter_from_c(filter: *const RecordFilter) -> Result<Filter, Status> {
    if filter.is_null() {
        return Ok(Filter::default());
    }
    let filter = filter.read();
    if filter.size < std::mem::size_of::<RecordFilter>() as u64
        || filter.record_count > RecordKind::COUNT as u64
        || (filter.record_count != 0 && filter.records.is_null())
    {
        return Err(Status::InvalidArgument);
    }
    let requests: &[RecordRequest] = if filter.record_count == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(filter.records, filter.record_count as usize)
    };
    let mut result = Filter::none();
    for request in requests {
        let kind = RecordKind::from_raw(request.kind).ok_or(Status::InvalidArgument)?;
        let immediate = request.flags & RECORD_REQUEST_FLAG_IMMEDIATE != 0;
        if request.size != std::mem::size_of::<RecordRequest>() as u64
            || result.enabled(kind)
            || request.flags & !RECORD_REQUEST_FLAG_IMMEDIATE != 0
            || (immediate && !Filter::may_be_immediate(kind))
        {
            return Err(Status::InvalidArgument);
        }
        result.set(
            kind,
            if immediate {
                Delivery::Immediate
            } else {
                Delivery::Pooled
            },
        );
    }
    Ok(result)
}

/// Chooses which record types later `parse` calls deliver, and how.
///
/// # Safety
/// `filter` is NULL or a valid filter (see [`filter_from_c`]).
// The link names a private helper on purpose: the text is also the C header's.
#[allow(rustdoc::private_intra_doc_links)]
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_set_record_filter(
    handle: Handle,
    filter: *const RecordFilter,
) -> StatusCode {
    ffi_boundary!(Status::Error, {
        if lookup(handle).is_none() {
            return Status::InvalidArgument;
        }
        match filter_from_c(filter) {
            Ok(new_filter) => configure(handle, |config| {
                config.filter = new_filter;
                Status::Success
            }),
            Err(status) => status,
        }
    })
}

/// Registers a code object for built-in disassembly.
///
/// # Safety
/// `data` is NULL or points to `data_size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_codeobj_load(
    handle: Handle,
    load_id: u64,
    load_addr: u64,
    load_size: u64,
    data: *const std::ffi::c_void,
    data_size: u64,
) -> StatusCode {
    ffi_boundary!(Status::Error, {
        configure(handle, |config| {
            // SAFETY: the caller's contract on `data`.
            let Some(image) = (unsafe { bytes(data.cast(), data_size) }) else {
                return Status::InvalidArgument;
            };
            let table = config
                .code_objects
                .get_mut()
                .unwrap_or_else(|e| e.into_inner());
            match table.load(load_id, load_addr, load_size, image) {
                Ok(()) => Status::Success,
                Err(error) if error.is_missing_disassembler() => Status::NotImplemented,
                Err(_) => Status::Error,
            }
        })
    })
}

/// Removes a code object registered with `codeobj_load`.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_codeobj_unload(handle: Handle, load_id: u64) -> StatusCode {
    ffi_boundary!(Status::Error, {
        configure(handle, |config| {
            let table = config
                .code_objects
                .get_mut()
                .unwrap_or_else(|e| e.into_inner());
            if table.backends().is_empty() {
                return Status::NotImplemented;
            }
            match table.unload(load_id) {
                true => Status::Success,
                false => Status::Error,
            }
        })
    })
}

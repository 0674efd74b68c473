//! `parse_data` (V1) and `parse` (V2): both pull SE buffers and run one decode session.

use std::ffi::c_void;

use super::boundary::{bytes, ffi_boundary};
use super::handle::{lookup, ParseMark};
use super::types::{
    Handle, IsaCallback, SeDataCallback, SeDataFn, StatusCode, TraceCallback, TraceFn, UserData,
};
use crate::decode::Session;
use crate::isa::callback::CallbackIsa;
use crate::isa::IsaProvider;
use crate::records::{for_each_record_kind, InfoCode, Status};
use crate::sink::{ClientCallback, Emitter, Filter, Record, RecordSink};

/// Hands records to the client's trace callback in the C layout.
pub(crate) struct TraceCallbackSink {
    pub client: ClientCallback,
}

/// The C callback's `(pointer, count)` of one payload shape (see `for_each_record_kind`).
macro_rules! c_payload {
    // The value itself travels as the pointer, with a count of 0 (the GFXIP major).
    (inline $payload:ident) => {
        (*$payload as usize as *mut c_void, 0)
    };
    (value $payload:ident) => {
        ($payload as *const _ as *mut c_void, 1)
    };
    (one $payload:ident) => {
        (*$payload as *const _ as *mut c_void, 1)
    };
    (batch $payload:ident) => {
        ($payload.as_ptr() as *mut c_void, $payload.len() as u64)
    };
}

macro_rules! c_arguments {
    ($($(#[$doc:meta])* $kind:ident = $code:literal, $c_name:literal:
        $shape:ident $payload:ty $(=> $view:ident)?;)*) => {
        /// Where the C callback finds a delivery's records, and how many there are; they live
        /// as long as `record`.
        fn c_arguments(record: &Record<'_>) -> (*mut c_void, u64) {
            match record {
                $(Record::$kind(payload) => c_payload!($shape payload),)*
            }
        }
    };
}
for_each_record_kind!(c_arguments);

impl RecordSink for TraceCallbackSink {
    fn deliver(&mut self, record: Record<'_>) -> i32 {
        let (pointer, count) = c_arguments(&record);
        // SAFETY: the pointer and count describe records that live until the call returns.
        unsafe { self.client.call(record.kind(), pointer, count) }
    }
}

/// Where a parse call gets its SE buffers.
enum Source<'a> {
    Callback(SeDataFn, UserData),
    Buffer(&'a [u8]),
}

/// The parse loop: each buffer is a complete SE stream; a buffer that fails stops the call
/// with ERROR_INVALID_SHADER_DATA after its records were delivered.
fn run(
    source: Source<'_>,
    isa: &mut dyn IsaProvider,
    filter: Filter,
    trace: TraceFn,
    trace_userdata: *mut c_void,
) -> Status {
    // SAFETY: the client's trace callback takes exactly these arguments (its C type).
    let client = unsafe { ClientCallback::new(trace, trace_userdata) };
    let mut sink = TraceCallbackSink { client };
    let mut emitter = Emitter::new(&mut sink, filter);
    emitter.hand_events_to(client);
    let mut session = Session::new(emitter, isa);
    let result = match source {
        Source::Buffer([]) => Ok(()),
        Source::Buffer(data) => session.decode_buffer(data),
        Source::Callback(callback, userdata) => loop {
            let mut buffer: *mut u8 = std::ptr::null_mut();
            let mut size = 0u64;
            // SAFETY: both out-pointers are valid for the call.
            let more = unsafe { callback(&mut buffer, &mut size, userdata.0) };
            if more == 0 || size == 0 || buffer.is_null() {
                break Ok(());
            }
            // SAFETY: the SE-data contract makes `buffer` hold `size` bytes until the next call.
            let Some(data) = (unsafe { bytes(buffer, size) }) else {
                break Ok(());
            };
            if let Err(e) = session.decode_buffer(data) {
                break Err(e);
            }
        },
    };
    // Every kind of decode failure is the same status to C.
    match result {
        Ok(()) => Status::Success,
        Err(_) => Status::InvalidShaderData,
    }
}

/// V1: decodes the SE buffers pulled from `se_data_callback`, with the default record filter.
#[no_mangle]
pub extern "C" fn rocprof_trace_decoder_parse_data(
    se_data_callback: SeDataCallback,
    trace_callback: TraceCallback,
    isa_callback: IsaCallback,
    userdata: *mut c_void,
) -> StatusCode {
    ffi_boundary!(Status::InvalidShaderData, {
        let (Some(se), Some(trace), Some(isa)) = (se_data_callback, trace_callback, isa_callback)
        else {
            return Status::InvalidArgument;
        };
        let userdata = UserData(userdata);
        run(
            Source::Callback(se, userdata),
            &mut CallbackIsa::new(isa, userdata.0),
            Filter::default(),
            trace,
            userdata.0,
        )
    })
}

/// V2: decodes `data` (or the handle's SE-data callback's buffers) with the handle's settings.
///
/// # Safety
/// `data` is NULL or points to `data_size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_parse(
    handle: Handle,
    data: *const c_void,
    data_size: u64,
    trace_callback: TraceCallback,
    userdata: *mut c_void,
) -> StatusCode {
    ffi_boundary!(Status::InvalidShaderData, {
        let Some(state) = lookup(handle) else {
            return Status::InvalidArgument;
        };
        let Some(trace) = trace_callback else {
            return Status::InvalidArgument;
        };
        // A callback of a parse on this handle calling `parse` again would take its locks twice.
        let Some(_parsing) = ParseMark::enter(handle) else {
            return Status::Error;
        };
        let config = state.read().unwrap_or_else(|e| e.into_inner());
        let source = match config.se_data_callback {
            Some((callback, se_userdata)) => Source::Callback(callback, se_userdata),
            None if data.is_null() || data_size == 0 => Source::Buffer(&[]),
            None => match bytes(data.cast(), data_size) {
                Some(slice) => Source::Buffer(slice),
                None => return Status::InvalidArgument,
            },
        };
        match config.isa_callback {
            Some((callback, isa_userdata)) => {
                let mut isa = CallbackIsa::new(callback, isa_userdata.0);
                run(source, &mut isa, config.filter, trace, userdata)
            }
            None => {
                let mut table = config
                    .code_objects
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if table.backends().is_empty() {
                    // No ISA callback and no built-in disassembler to fall back on.
                    return Status::NotImplemented;
                }
                run(source, &mut *table, config.filter, trace, userdata)
            }
        }
    })
}

// Keeps the INFO payload type in one place for the C side.
const _: () = assert!(std::mem::size_of::<InfoCode>() == 4);

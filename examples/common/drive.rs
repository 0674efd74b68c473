//! The decoding loops of the bench and of the PGO training run (`pgo_train`): every SE buffer of
//! an example through the Rust API, or through one of the C entry points with the ISA answers and
//! records passing through C callbacks, as a client's would.

use std::ffi::{c_char, c_void};

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::ffi::handle::{
    rocprof_trace_decoder_create_handle, rocprof_trace_decoder_destroy_handle,
    rocprof_trace_decoder_set_isa_callback,
};
use rocprof_trace_decoder::ffi::parse::{
    rocprof_trace_decoder_parse, rocprof_trace_decoder_parse_data,
};
use rocprof_trace_decoder::ffi::types::Handle;
use rocprof_trace_decoder::isa::IsaProvider;
use rocprof_trace_decoder::records::{Pc, RecordKind, Status, Wave};
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

use crate::common::IsaTable;

/// Touches every instruction of a WAVE record, as a client would; returns how many there were.
fn touch(wave: &Wave, checksum: &mut i64) -> u64 {
    if wave.instructions_size > 0 && !wave.instructions_array.is_null() {
        // SAFETY: the array holds `instructions_size` records for the duration of the callback.
        let insts = unsafe {
            std::slice::from_raw_parts(wave.instructions_array, wave.instructions_size as usize)
        };
        *checksum = insts.iter().fold(*checksum, |c, i| c.wrapping_add(i.time));
    }
    wave.instructions_size
}

/// Decodes every SE buffer in its own session; returns the instruction count.
pub fn decode_rust(buffers: &[Vec<u8>], isa: &mut IsaTable) -> u64 {
    let mut instructions = 0u64;
    let mut checksum = 0i64;
    for data in buffers {
        let mut sink = |record: Record<'_>| {
            if let Record::Wave(w) = record {
                instructions += touch(w, &mut checksum);
            }
            0
        };
        let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), isa);
        let _ = session.decode_buffer(data);
    }
    std::hint::black_box(checksum);
    instructions
}

/// What the C callbacks of one parse call reach through their userdata.
struct CallState<'a> {
    isa: &'a mut IsaTable,
    /// The SE buffer the V1 SE-data callback hands out (once).
    pending: Option<&'a [u8]>,
    text: Vec<u8>,
    instructions: u64,
    checksum: i64,
}

unsafe extern "C" fn trace_callback(
    kind: i32,
    data: *mut c_void,
    count: u64,
    userdata: *mut c_void,
) -> i32 {
    // SAFETY: userdata is the CallState of the running parse call.
    let state = unsafe { &mut *userdata.cast::<CallState>() };
    if kind == RecordKind::Wave as i32 && !data.is_null() {
        // SAFETY: a WAVE callback passes `count` WAVE records.
        let waves = unsafe { std::slice::from_raw_parts(data.cast::<Wave>(), count as usize) };
        for wave in waves {
            state.instructions += touch(wave, &mut state.checksum);
        }
    }
    Status::Success as i32
}

unsafe extern "C" fn isa_callback(
    text: *mut c_char,
    memory_size: *mut u64,
    size: *mut u64,
    pc: Pc,
    userdata: *mut c_void,
) -> i32 {
    // SAFETY: userdata is the CallState of the running parse call; the out-pointers are valid.
    let state = unsafe { &mut *userdata.cast::<CallState>() };
    let mut line = std::mem::take(&mut state.text);
    let answer = state.isa.disassemble(pc, &mut line);
    let status = match answer {
        Err(_) => Status::InvalidArgument as i32,
        Ok(_) if line.len() as u64 > unsafe { *size } => {
            unsafe { *size = line.len() as u64 };
            Status::OutOfResources as i32
        }
        Ok(bytes) => {
            // SAFETY: the decoder's buffer holds `*size` >= line.len() bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(line.as_ptr(), text.cast::<u8>(), line.len());
                *size = line.len() as u64;
                *memory_size = bytes;
            }
            Status::Success as i32
        }
    };
    state.text = line;
    status
}

unsafe extern "C" fn se_data_callback(
    buffer: *mut *mut u8,
    size: *mut u64,
    userdata: *mut c_void,
) -> u64 {
    // SAFETY: userdata is the CallState of the running parse call; the out-pointers are valid.
    let state = unsafe { &mut *userdata.cast::<CallState>() };
    match state.pending.take() {
        Some(data) => {
            unsafe {
                *buffer = data.as_ptr().cast_mut();
                *size = data.len() as u64;
            }
            1
        }
        None => 0,
    }
}

/// Which C entry point decodes.
#[derive(Clone, Copy)]
pub enum CApi {
    V1,
    V2,
}

/// Decodes every SE buffer with one C parse call each; returns the instruction count.
pub fn decode_c(api: CApi, buffers: &[Vec<u8>], isa: &mut IsaTable) -> u64 {
    let mut state = CallState {
        isa,
        pending: None,
        text: Vec::new(),
        instructions: 0,
        checksum: 0,
    };
    let userdata = (&mut state as *mut CallState).cast::<c_void>();
    match api {
        CApi::V1 => {
            for data in buffers {
                // SAFETY: the state outlives the call and is only reached through userdata.
                unsafe { (*userdata.cast::<CallState>()).pending = Some(data) };
                rocprof_trace_decoder_parse_data(
                    Some(se_data_callback),
                    Some(trace_callback),
                    Some(isa_callback),
                    userdata,
                );
            }
        }
        CApi::V2 => {
            let mut handle = Handle { handle: 0 };
            // SAFETY: valid out-pointer; the buffers and state outlive every call on the handle.
            unsafe {
                rocprof_trace_decoder_create_handle(&mut handle);
                rocprof_trace_decoder_set_isa_callback(handle, Some(isa_callback), userdata);
                for data in buffers {
                    rocprof_trace_decoder_parse(
                        handle,
                        data.as_ptr().cast(),
                        data.len() as u64,
                        Some(trace_callback),
                        userdata,
                    );
                }
            }
            rocprof_trace_decoder_destroy_handle(handle);
        }
    }
    std::hint::black_box(state.checksum);
    state.instructions
}

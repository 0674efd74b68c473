//! The client's ISA callback (`rocprof_trace_decoder_isa_callback_t`) as an [`IsaProvider`].

use std::ffi::{c_char, c_void};

use super::{IsaError, IsaProvider};
use crate::records::{Pc, Status};

/// `status (*)(char* instruction, uint64_t* memory_size, uint64_t* size, pc_t address, void* userdata)`
pub type IsaCallback =
    unsafe extern "C" fn(*mut c_char, *mut u64, *mut u64, Pc, *mut c_void) -> i32;

/// First text capacity offered, as the reference does; it grows to the largest size asked for.
const INITIAL_CAPACITY: usize = 64;
/// A callback asking for more than this is treated as failing rather than trusted.
const MAX_TEXT: u64 = 1 << 20;

pub struct CallbackIsa {
    callback: IsaCallback,
    userdata: *mut c_void,
    buffer: Vec<u8>,
    /// Number of callback invocations, retries included.
    pub calls: u64,
}

impl CallbackIsa {
    pub fn new(callback: IsaCallback, userdata: *mut c_void) -> Self {
        CallbackIsa {
            callback,
            userdata,
            buffer: vec![0; INITIAL_CAPACITY],
            calls: 0,
        }
    }

    fn call(&mut self, pc: Pc, size: &mut u64, memory_size: &mut u64) -> i32 {
        self.calls += 1;
        *size = self.buffer.len() as u64;
        // SAFETY: the buffer holds `*size` writable bytes; the callback contract says it writes
        // at most that many, and the pointers stay valid for the call.
        unsafe {
            (self.callback)(
                self.buffer.as_mut_ptr().cast(),
                memory_size,
                size,
                pc,
                self.userdata,
            )
        }
    }
}

impl IsaProvider for CallbackIsa {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        text.clear();
        let mut size = 0u64;
        let mut memory_size = 0u64;
        let mut status = self.call(pc, &mut size, &mut memory_size);
        if status == Status::OutOfResources as i32 {
            // One retry with exactly the size asked for; the capacity stays at the maximum.
            if size == 0 || size > MAX_TEXT || size as usize <= self.buffer.len() {
                return Err(IsaError::Failed(status));
            }
            self.buffer.resize(size as usize, 0);
            status = self.call(pc, &mut size, &mut memory_size);
        }
        if status != Status::Success as i32 {
            return Err(IsaError::Failed(status));
        }
        let len = (size as usize).min(self.buffer.len());
        text.extend_from_slice(&self.buffer[..len]);
        Ok(memory_size)
    }
}

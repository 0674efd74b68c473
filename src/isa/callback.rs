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
}

impl CallbackIsa {
    pub fn new(callback: IsaCallback, userdata: *mut c_void) -> Self {
        CallbackIsa { callback, userdata }
    }

    /// The callback asked for `size` bytes: one retry with exactly the size asked for (the
    /// capacity offered stays at the maximum), unless that is no more than it had or too large.
    #[cold]
    #[inline(never)]
    fn retry_larger(
        &mut self,
        offered: &mut Vec<u8>,
        pc: Pc,
        size: &mut u64,
        memory_size: &mut u64,
    ) -> i32 {
        if *size == 0 || *size > MAX_TEXT || *size as usize <= offered.len() {
            return Status::OutOfResources as i32;
        }
        offered.resize(*size as usize, 0);
        self.call(offered, pc, size, memory_size)
    }

    fn call(&mut self, text: &mut [u8], pc: Pc, size: &mut u64, memory_size: &mut u64) -> i32 {
        *size = text.len() as u64;
        // SAFETY: the buffer holds `*size` writable bytes; the callback contract says it writes
        // at most that many, and the pointers stay valid for the call.
        unsafe {
            (self.callback)(
                text.as_mut_ptr().cast(),
                memory_size,
                size,
                pc,
                self.userdata,
            )
        }
    }
}

impl IsaProvider for CallbackIsa {
    fn as_callback(&mut self) -> Option<&mut CallbackIsa> {
        Some(self)
    }

    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        text.clear();
        let mut offered = Vec::new();
        let (memory_size, answer) = self.answer(pc, &mut offered)?;
        text.extend_from_slice(answer);
        Ok(memory_size)
    }

    /// The callback writes into `offered`, the buffer offered to it: its length is the capacity
    /// offered, [`INITIAL_CAPACITY`] where it is shorter (the stitcher's, emptied at each parse
    /// call's end: each call starts at the first capacity), and it keeps the largest size asked
    /// for. The answer is lent from it.
    #[inline(always)]
    fn answer<'a>(
        &'a mut self,
        pc: Pc,
        offered: &'a mut Vec<u8>,
    ) -> Result<(u64, &'a [u8]), IsaError> {
        if offered.len() < INITIAL_CAPACITY {
            offer_first_capacity(offered);
        }
        let mut size = 0u64;
        let mut memory_size = 0u64;
        let mut status = self.call(offered, pc, &mut size, &mut memory_size);
        if status == Status::OutOfResources as i32 {
            status = self.retry_larger(offered, pc, &mut size, &mut memory_size);
        }
        if status != Status::Success as i32 {
            return Err(IsaError::Failed(status));
        }
        let len = (size as usize).min(offered.len());
        Ok((memory_size, &offered[..len]))
    }
}

/// A parse call's first question: the buffer offered at the first capacity.
#[cold]
#[inline(never)]
fn offer_first_capacity(offered: &mut Vec<u8>) {
    offered.resize(INITIAL_CAPACITY, 0);
}

//! The client's ISA callback (`rocprof_trace_decoder_isa_callback_t`) as an [`IsaProvider`].

use std::ffi::{c_char, c_void};

use super::{IsaError, IsaProvider};
use crate::records::{Pc, Status};
use crate::spare::{Recycle, Spare};

/// `status (*)(char* instruction, uint64_t* memory_size, uint64_t* size, pc_t address, void* userdata)`
pub type IsaCallback =
    unsafe extern "C" fn(*mut c_char, *mut u64, *mut u64, Pc, *mut c_void) -> i32;

/// First text capacity offered, as the reference does; it grows to the largest size asked for.
const INITIAL_CAPACITY: usize = 64;
/// A callback asking for more than this is treated as failing rather than trusted.
const MAX_TEXT: u64 = 1 << 20;

/// The text buffer offered to the callback, kept by the thread between parse calls.
#[derive(Default)]
struct TextBuffer(Vec<u8>);

/// A buffer grown past this for an odd answer is not kept.
const KEPT_TEXT: usize = 4096;

impl Recycle for TextBuffer {
    fn recycle(&mut self) -> bool {
        // The next call offers the first capacity again; what the bytes hold does not matter, so
        // they are not written again.
        self.0.truncate(INITIAL_CAPACITY);
        self.0.capacity() <= KEPT_TEXT
    }
}

thread_local! {
    static SPARE_TEXT: std::cell::Cell<Option<Box<TextBuffer>>> =
        const { std::cell::Cell::new(None) };
}

pub struct CallbackIsa {
    callback: IsaCallback,
    userdata: *mut c_void,
    buffer: Spare<TextBuffer>,
}

impl CallbackIsa {
    pub fn new(callback: IsaCallback, userdata: *mut c_void) -> Self {
        let mut buffer = Spare::take(&SPARE_TEXT);
        // Each call starts at the first capacity; the allocation may be larger.
        buffer.0.resize(INITIAL_CAPACITY, 0);
        CallbackIsa {
            callback,
            userdata,
            buffer,
        }
    }

    fn call(&mut self, pc: Pc, size: &mut u64, memory_size: &mut u64) -> i32 {
        *size = self.buffer.0.len() as u64;
        // SAFETY: the buffer holds `*size` writable bytes; the callback contract says it writes
        // at most that many, and the pointers stay valid for the call.
        unsafe {
            (self.callback)(
                self.buffer.0.as_mut_ptr().cast(),
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
        let mut unused = Vec::new();
        let (memory_size, answer) = self.answer(pc, &mut unused)?;
        text.extend_from_slice(answer);
        Ok(memory_size)
    }

    /// The text in the buffer offered to the callback.
    #[inline(always)]
    fn answer<'a>(&'a mut self, pc: Pc, _: &'a mut Vec<u8>) -> Result<(u64, &'a [u8]), IsaError> {
        let mut size = 0u64;
        let mut memory_size = 0u64;
        let mut status = self.call(pc, &mut size, &mut memory_size);
        if status == Status::OutOfResources as i32 {
            // One retry with exactly the size asked for; the capacity stays at the maximum.
            if size == 0 || size > MAX_TEXT || size as usize <= self.buffer.0.len() {
                return Err(IsaError::Failed(status));
            }
            self.buffer.0.resize(size as usize, 0);
            status = self.call(pc, &mut size, &mut memory_size);
        }
        if status != Status::Success as i32 {
            return Err(IsaError::Failed(status));
        }
        let len = (size as usize).min(self.buffer.0.len());
        Ok((memory_size, &self.buffer.0[..len]))
    }
}

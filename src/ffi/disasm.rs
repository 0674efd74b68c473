//! C API of the built-in AMDGPU instruction decoder (`rocprof_trace_decoder_disasm.h`, generated
//! by cbindgen): an extra beyond the 0.3.0 API, so that a client with no LLVM and no COMGR (the
//! Python package's code metadata, for one) can disassemble with the tables of
//! `src/isa/builtin`.
//!
//! Every function catches panics and reports them as status 1.

use std::ffi::{c_char, c_void};

use super::boundary::{bytes, c_str, ffi_boundary};
use crate::isa::builtin::Tables;
use crate::records::Status;

/// A `rocprofiler_thread_trace_decoder_status_t` value (0 success, 1 error, 3 invalid argument,
/// 5 not implemented), or a status returned by an instruction callback.
pub type StatusCode = i32;

/// Receives one instruction, in address order: its virtual `address`, its encoded `size` in bytes
/// and its NUL-terminated `text`, valid only during the call: LLVM's mnemonic, followed for
/// branches by their 16-bit immediate as an unsigned decimal (`s_cbranch_execz 43`); no other
/// operands. Bytes LLVM rejects (its `.long`) that the tables know past LLVM (an unused operand
/// field set, an opcode only the ISA's opcode lists name) get the mnemonic and size those give.
/// `text` is NULL for a dword the tables do not know (`size` is then 4): it is left
/// unattributed, never guessed, and decoding goes on at the next dword. Returning non-zero
/// stops the disassembly, which then returns that status.
pub type BuiltinInstructionCallback = Option<
    unsafe extern "C" fn(
        address: u64,
        size: u64,
        text: *const c_char,
        userdata: *mut c_void,
    ) -> StatusCode,
>;

/// The dword granularity of AMDGPU code: every instruction is a whole number of dwords.
const DWORD: u64 = 4;

/// Disassembles `code_size` bytes of code for processor `target` (e.g. `"gfx942"`, `"gfx1100"`)
/// whose first byte sits at virtual address `address`, with the built-in tables: every
/// instruction goes to `callback` before the call returns. An instruction that runs past the end
/// of the code is reported as an unknown dword.
///
/// Returns 0 on success; 3 for a NULL `target` or `callback`, NULL `code` with a non-zero size, a
/// size that is not a multiple of 4, or `address + code_size` above `UINT64_MAX`;
/// 5 when the built-in tables do not know `target` (no callback is made); the callback's status
/// if it returned non-zero.
///
/// # Safety
/// `target` must be NULL or a NUL-terminated string; `code` must be NULL or point to
/// `code_size` readable bytes; `callback` must be safe to call with `userdata`.
#[no_mangle]
pub unsafe extern "C" fn rocprof_trace_decoder_builtin_disassemble(
    target: *const c_char,
    code: *const c_void,
    code_size: u64,
    address: u64,
    callback: BuiltinInstructionCallback,
    userdata: *mut c_void,
) -> StatusCode {
    ffi_boundary!(Status::Error, {
        let (Some(target), Some(callback)) = (c_str(target), callback) else {
            return Status::InvalidArgument as StatusCode;
        };
        if !code_size.is_multiple_of(DWORD) || address.checked_add(code_size).is_none() {
            return Status::InvalidArgument as StatusCode;
        }
        let code: &[u8] = match code_size {
            0 => &[],
            _ => match bytes(code.cast(), code_size) {
                Some(code) => code,
                None => return Status::InvalidArgument as StatusCode,
            },
        };
        let Some(tables) = target.to_str().ok().and_then(Tables::of) else {
            return Status::NotImplemented as StatusCode;
        };
        let mut text = Vec::new();
        let mut offset = 0;
        while offset < code.len() {
            text.clear();
            // A zero size would never advance; the tables have none, but C must not hang on it.
            let rest = &code[offset..];
            let decoded = tables
                .decode(rest, &mut text)
                .or_else(|| tables.decode_past_llvm(rest, &mut text))
                .filter(|&size| size > 0);
            let size = decoded.unwrap_or(DWORD as usize);
            let text_or_null = match decoded {
                Some(_) => {
                    text.push(0);
                    text.as_ptr().cast()
                }
                None => std::ptr::null(),
            };
            let at = address + offset as u64;
            // SAFETY: the caller vouches for the callback; `text` outlives the call.
            let status = unsafe { callback(at, size as u64, text_or_null, userdata) };
            if status != Status::Success as StatusCode {
                return status;
            }
            offset += size;
        }
        Status::Success as StatusCode
    })
}

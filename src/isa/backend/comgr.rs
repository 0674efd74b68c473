//! AMD's Code Object Manager (`amd_comgr.h`) disassembly API.

use std::ffi::{c_char, c_void, CStr, CString};

use super::dl::Library;

/// `amd_comgr_disassembly_info_t`: an opaque handle passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
struct InfoHandle {
    handle: u64,
}

type ReadMemory = unsafe extern "C" fn(u64, *mut c_char, u64, *mut c_void) -> u64;
type PrintInstruction = unsafe extern "C" fn(*const c_char, *mut c_void);
type PrintAddress = unsafe extern "C" fn(u64, *mut c_void);
type GetIsaCount = unsafe extern "C" fn(*mut usize) -> i32;
type GetIsaName = unsafe extern "C" fn(usize, *mut *const c_char) -> i32;
type CreateInfo = unsafe extern "C" fn(
    *const c_char,
    ReadMemory,
    PrintInstruction,
    PrintAddress,
    *mut InfoHandle,
) -> i32;
type DisassembleInstruction = unsafe extern "C" fn(InfoHandle, u64, *mut c_void, *mut u64) -> i32;
type DestroyInfo = unsafe extern "C" fn(InfoHandle) -> i32;

const STATUS_SUCCESS: i32 = 0;
/// COMGR names targets `<triple>--<processor>`.
const ISA_PREFIX: &str = "amdgcn-amd-amdhsa--";
/// Bounds the ISA list walk against a broken library.
const MAX_ISAS: usize = 4096;

pub struct Comgr {
    /// The processors COMGR lists (feature-free names only).
    processors: Vec<String>,
    create: CreateInfo,
    disassemble: DisassembleInstruction,
    destroy: DestroyInfo,
}

impl Comgr {
    /// Binds the disassembly API of `library`; `None` when it is not a usable COMGR.
    pub fn bind(library: &Library) -> Option<Comgr> {
        // SAFETY: each symbol is taken with its C signature from amd_comgr.h; the ISA names are
        // static NUL-terminated strings owned by COMGR.
        unsafe {
            let count = library.function::<GetIsaCount>(c"amd_comgr_get_isa_count")?;
            let name = library.function::<GetIsaName>(c"amd_comgr_get_isa_name")?;
            let create = library.function::<CreateInfo>(c"amd_comgr_create_disassembly_info")?;
            let disassemble =
                library.function::<DisassembleInstruction>(c"amd_comgr_disassemble_instruction")?;
            let destroy = library.function::<DestroyInfo>(c"amd_comgr_destroy_disassembly_info")?;
            let mut total = 0usize;
            if count(&mut total) != STATUS_SUCCESS {
                return None;
            }
            let mut processors = Vec::new();
            for index in 0..total.min(MAX_ISAS) {
                let mut isa: *const c_char = std::ptr::null();
                if name(index, &mut isa) != STATUS_SUCCESS || isa.is_null() {
                    continue;
                }
                let isa = CStr::from_ptr(isa).to_string_lossy();
                if let Some(processor) = isa.strip_prefix(ISA_PREFIX) {
                    if !processor.contains(':') {
                        processors.push(processor.to_owned());
                    }
                }
            }
            Some(Comgr {
                processors,
                create,
                disassemble,
                destroy,
            })
        }
    }

    pub fn supports(&self, cpu: &str) -> bool {
        self.processors.iter().any(|p| p == cpu)
    }

    /// A disassembler for `cpu`; the caller has checked [`Comgr::supports`].
    pub fn open(&self, cpu: &str) -> Option<ComgrContext> {
        let isa = CString::new(format!("{ISA_PREFIX}{cpu}")).ok()?;
        let mut info = InfoHandle { handle: 0 };
        // SAFETY: a valid ISA name, callbacks with the documented signatures, a valid out slot.
        let status = unsafe {
            (self.create)(
                isa.as_ptr(),
                read_memory,
                print_instruction,
                ignore_address,
                &mut info,
            )
        };
        (status == STATUS_SUCCESS).then_some(ComgrContext {
            info,
            disassemble: self.disassemble,
            destroy: self.destroy,
        })
    }
}

/// What the callbacks of one `amd_comgr_disassemble_instruction` call see.
struct Request<'a> {
    code: &'a [u8],
    address: u64,
    text: &'a mut Vec<u8>,
}

/// COMGR reads instruction bytes through this callback, with addresses as we passed them.
unsafe extern "C" fn read_memory(from: u64, to: *mut c_char, size: u64, user: *mut c_void) -> u64 {
    // SAFETY: `user` is the `Request` passed to amd_comgr_disassemble_instruction, alive for
    // the call; `to` has room for `size` bytes.
    let request = &*(user as *const Request<'_>);
    let Some(offset) = from.checked_sub(request.address) else {
        return 0;
    };
    let Some(available) = request.code.get(offset.min(usize::MAX as u64) as usize..) else {
        return 0;
    };
    let count = available.len().min(size.min(usize::MAX as u64) as usize);
    std::ptr::copy_nonoverlapping(available.as_ptr(), to.cast::<u8>(), count);
    count as u64
}

unsafe extern "C" fn print_instruction(instruction: *const c_char, user: *mut c_void) {
    if instruction.is_null() {
        return;
    }
    // SAFETY: as in `read_memory`; COMGR passes a NUL-terminated string.
    let request = &mut *(user as *mut Request<'_>);
    request
        .text
        .extend_from_slice(CStr::from_ptr(instruction).to_bytes());
}

/// Branch-target annotations are not part of the instruction text.
unsafe extern "C" fn ignore_address(_address: u64, _user: *mut c_void) {}

/// One COMGR disassembly info object, used by one thread at a time.
pub struct ComgrContext {
    info: InfoHandle,
    disassemble: DisassembleInstruction,
    destroy: DestroyInfo,
}

// SAFETY: the info object is used through `&mut self` only.
unsafe impl Send for ComgrContext {}

impl ComgrContext {
    /// Decodes the instruction at the start of `code` (located at `address`); appends its text
    /// to `text` and returns its size, or `None` when the bytes are not a valid instruction.
    pub fn decode(&mut self, code: &[u8], address: u64, text: &mut Vec<u8>) -> Option<usize> {
        let start = text.len();
        let mut request = Request {
            code,
            address,
            text,
        };
        let mut size = 0u64;
        // SAFETY: `request` outlives the call and is only reached through the callbacks.
        let status = unsafe {
            (self.disassemble)(
                self.info,
                address,
                (&mut request as *mut Request<'_>).cast(),
                &mut size,
            )
        };
        if status != STATUS_SUCCESS || size == 0 || size > code.len() as u64 {
            request.text.truncate(start);
            return None;
        }
        Some(size as usize)
    }
}

impl Drop for ComgrContext {
    fn drop(&mut self) {
        // SAFETY: the info object came from amd_comgr_create_disassembly_info, destroyed once.
        unsafe {
            (self.destroy)(self.info);
        }
    }
}

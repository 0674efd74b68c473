//! LLVM's C disassembler (`llvm-c/Disassembler.h`) from a shared `libLLVM`.

use std::ffi::{c_char, c_int, c_void, CString};

use super::dl::Library;

type CreateDisasmCpu = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *mut c_void,
    c_int,
    *mut c_void,
    *mut c_void,
) -> *mut c_void;
type DisasmInstruction =
    unsafe extern "C" fn(*mut c_void, *mut u8, u64, u64, *mut c_char, usize) -> usize;
type DisasmDispose = unsafe extern "C" fn(*mut c_void);
type GetVersion = unsafe extern "C" fn(*mut u32, *mut u32, *mut u32);
type Initialize = unsafe extern "C" fn();

/// `LLVMGetVersion` exists from LLVM 16 on; older libraries are not used.
const MIN_MAJOR: u32 = 16;

/// AMDGPU processors and the LLVM majors whose disassembler knows them (inclusive range).
/// Asking LLVM for a processor it does not know aborts the process ("Disassembly not yet
/// supported for subtarget"), so nothing outside this table is ever passed to it.
const PROCESSORS: &[(&str, u32, u32)] = &[
    ("gfx600", 16, u32::MAX),
    ("gfx601", 16, u32::MAX),
    ("gfx602", 16, u32::MAX),
    ("gfx700", 16, u32::MAX),
    ("gfx701", 16, u32::MAX),
    ("gfx702", 16, u32::MAX),
    ("gfx703", 16, u32::MAX),
    ("gfx704", 16, u32::MAX),
    ("gfx705", 16, u32::MAX),
    ("gfx801", 16, u32::MAX),
    ("gfx802", 16, u32::MAX),
    ("gfx803", 16, u32::MAX),
    ("gfx805", 16, u32::MAX),
    ("gfx810", 16, u32::MAX),
    ("gfx900", 16, u32::MAX),
    ("gfx902", 16, u32::MAX),
    ("gfx904", 16, u32::MAX),
    ("gfx906", 16, u32::MAX),
    ("gfx908", 16, u32::MAX),
    ("gfx909", 16, u32::MAX),
    ("gfx90a", 16, u32::MAX),
    ("gfx90c", 16, u32::MAX),
    ("gfx940", 16, 20),
    ("gfx941", 17, 20),
    ("gfx942", 17, u32::MAX),
    ("gfx950", 20, u32::MAX),
    ("gfx1010", 16, u32::MAX),
    ("gfx1011", 16, u32::MAX),
    ("gfx1012", 16, u32::MAX),
    ("gfx1013", 16, u32::MAX),
    ("gfx1030", 16, u32::MAX),
    ("gfx1031", 16, u32::MAX),
    ("gfx1032", 16, u32::MAX),
    ("gfx1033", 16, u32::MAX),
    ("gfx1034", 16, u32::MAX),
    ("gfx1035", 16, u32::MAX),
    ("gfx1036", 16, u32::MAX),
    ("gfx1100", 16, u32::MAX),
    ("gfx1101", 16, u32::MAX),
    ("gfx1102", 16, u32::MAX),
    ("gfx1103", 16, u32::MAX),
    ("gfx1150", 17, u32::MAX),
    ("gfx1151", 17, u32::MAX),
    ("gfx1152", 19, u32::MAX),
    ("gfx1153", 20, u32::MAX),
    ("gfx1200", 18, u32::MAX),
    ("gfx1201", 18, u32::MAX),
    ("gfx1250", 21, u32::MAX),
    ("gfx9-generic", 19, u32::MAX),
    ("gfx9-4-generic", 20, u32::MAX),
    ("gfx10-1-generic", 19, u32::MAX),
    ("gfx10-3-generic", 19, u32::MAX),
    ("gfx11-generic", 19, u32::MAX),
    ("gfx12-generic", 19, u32::MAX),
];

/// Text capacity handed to LLVM; it truncates longer text (no AMDGPU instruction comes near).
const TEXT_CAPACITY: usize = 512;

pub struct Llvm {
    pub major: u32,
    create: CreateDisasmCpu,
    instruction: DisasmInstruction,
    dispose: DisasmDispose,
}

impl Llvm {
    /// Binds the disassembler API of `library` and registers the AMDGPU target; `None` when
    /// the library is not an LLVM with the AMDGPU disassembler, or is older than LLVM 16.
    pub fn bind(library: &Library) -> Option<Llvm> {
        // SAFETY: each symbol is taken with its C signature from llvm-c/Disassembler.h,
        // llvm-c/Core.h and llvm-c/Target.h; the initialisers are idempotent and thread-safe
        // (they register the target once behind LLVM's own guards).
        unsafe {
            let version = library.function::<GetVersion>(c"LLVMGetVersion")?;
            let create = library.function::<CreateDisasmCpu>(c"LLVMCreateDisasmCPU")?;
            let instruction = library.function::<DisasmInstruction>(c"LLVMDisasmInstruction")?;
            let dispose = library.function::<DisasmDispose>(c"LLVMDisasmDispose")?;
            let target_info = library.function::<Initialize>(c"LLVMInitializeAMDGPUTargetInfo")?;
            let target_mc = library.function::<Initialize>(c"LLVMInitializeAMDGPUTargetMC")?;
            let disassembler =
                library.function::<Initialize>(c"LLVMInitializeAMDGPUDisassembler")?;
            let (mut major, mut minor, mut patch) = (0, 0, 0);
            version(&mut major, &mut minor, &mut patch);
            if major < MIN_MAJOR {
                return None;
            }
            target_info();
            target_mc();
            disassembler();
            Some(Llvm {
                major,
                create,
                instruction,
                dispose,
            })
        }
    }

    pub fn supports(&self, cpu: &str) -> bool {
        PROCESSORS
            .iter()
            .any(|&(name, first, last)| name == cpu && (first..=last).contains(&self.major))
    }

    /// A disassembler for `cpu`; the caller has checked [`Llvm::supports`].
    pub fn open(&self, cpu: &str) -> Option<LlvmContext> {
        let cpu = CString::new(cpu).ok()?;
        // SAFETY: valid NUL-terminated strings; no symbolizer callbacks (NULL) so branch
        // operands print as the raw SIMM16, as llvm-objdump does.
        let context = unsafe {
            (self.create)(
                c"amdgcn-amd-amdhsa".as_ptr(),
                cpu.as_ptr(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        (!context.is_null()).then_some(LlvmContext {
            context,
            instruction: self.instruction,
            dispose: self.dispose,
        })
    }
}

/// One `LLVMDisasmContextRef`, used by one thread at a time.
pub struct LlvmContext {
    context: *mut c_void,
    instruction: DisasmInstruction,
    dispose: DisasmDispose,
}

// SAFETY: an LLVM disassembler context is not shared; it only needs exclusive use, which
// `&mut self` gives.
unsafe impl Send for LlvmContext {}

impl LlvmContext {
    /// Decodes the instruction at the start of `code` (located at `address`); appends its text
    /// to `text` and returns its size, or `None` when the bytes are not a valid instruction.
    pub fn decode(&mut self, code: &[u8], address: u64, text: &mut Vec<u8>) -> Option<usize> {
        let mut buffer = [0 as c_char; TEXT_CAPACITY];
        // SAFETY: LLVM reads at most `code.len()` bytes (it never writes them, despite the
        // non-const pointer) and writes a NUL-terminated string of at most TEXT_CAPACITY bytes.
        let size = unsafe {
            (self.instruction)(
                self.context,
                code.as_ptr().cast_mut(),
                code.len() as u64,
                address,
                buffer.as_mut_ptr(),
                TEXT_CAPACITY,
            )
        };
        if size == 0 || size > code.len() {
            return None;
        }
        let length = buffer.iter().position(|&c| c == 0).unwrap_or(TEXT_CAPACITY);
        text.extend(buffer[..length].iter().map(|&c| c as u8));
        Some(size)
    }
}

impl Drop for LlvmContext {
    fn drop(&mut self) {
        // SAFETY: the context came from LLVMCreateDisasmCPU and is disposed once.
        unsafe { (self.dispose)(self.context) }
    }
}

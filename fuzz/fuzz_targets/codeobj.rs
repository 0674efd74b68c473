//! Malformed code objects: `CodeObject::parse` (ELF sections, symbols, DWARF lines) and the C
//! `codeobj_load`/`codeobj_unload` never fault, and lookups on an accepted object stay inside it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocprof_trace_decoder::ffi::handle::{
    rocprof_trace_decoder_codeobj_load, rocprof_trace_decoder_codeobj_unload,
};
use rocprof_trace_decoder::isa::codeobj::CodeObject;
use rocprof_trace_decoder_fuzz::client::OwnedHandle;

fuzz_target!(|input: &[u8]| {
    let [load, elf @ ..] = input else {
        return;
    };
    let load_addr = u64::from(*load) << 12;
    if let Ok(object) = CodeObject::parse(1, load_addr, elf.len() as u64, elf) {
        for symbol in object.symbols() {
            let _ = object.code_at(symbol.vaddr);
            let _ = object.line_at(symbol.vaddr);
        }
        for vaddr in (0..elf.len() as u64).step_by(61) {
            if let Some(code) = object.code_at(vaddr) {
                assert!(code.len() <= elf.len() + 4096, "code runs past the image");
            }
            let _ = object.line_at(vaddr);
        }
    }
    let handle = OwnedHandle::new();
    // SAFETY: `elf` is live for the call.
    let status = unsafe {
        rocprof_trace_decoder_codeobj_load(
            handle.0,
            7,
            load_addr,
            elf.len() as u64,
            elf.as_ptr().cast(),
            elf.len() as u64,
        )
    };
    assert!(
        matches!(status, 0 | 1 | 5),
        "codeobj_load returned {status}"
    );
    let unloaded = rocprof_trace_decoder_codeobj_unload(handle.0, 7);
    assert!(matches!(unloaded, 0 | 1 | 5));
    assert_eq!(
        status == 0,
        unloaded == 0,
        "unload succeeds exactly when load did"
    );
});

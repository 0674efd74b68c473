//! `quick_scan` and `build_standalone` on fuzz bytes behind each architecture's header, over
//! consecutive chunks on one handle: documented statuses, no fault, no write past the output
//! capacity, and a standalone buffer that `parse` accepts or rejects without faulting.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocprof_trace_decoder::ffi::scan::{
    rocprof_trace_decoder_build_standalone, rocprof_trace_decoder_quick_scan,
};
use rocprof_trace_decoder_fuzz::client::{on_records, IsaMode, IsaScript, OwnedHandle, Transcript};
use rocprof_trace_decoder_fuzz::with_header;

/// Bytes after the output capacity that must survive `build_standalone`.
const GUARD: usize = 64;

fuzz_target!(|input: &[u8]| {
    let [selector, split, begin, end, capacity, payload @ ..] = input else {
        return;
    };
    let trace = with_header(*selector, payload);
    let cut = (usize::from(*split) * trace.len() / 256)
        .max(8)
        .min(trace.len());
    let chunks = [&trace[..cut], &trace[cut..]];
    let handle = OwnedHandle::new();
    let mut script = IsaScript::new(IsaMode::Nop);
    assert_eq!(handle.set_isa(&mut script), 0);
    for (index, chunk) in chunks.iter().enumerate() {
        let mut transcript = Transcript::default().answering(i32::from(*capacity & 1));
        // SAFETY: the chunk and the transcript are live for the call.
        let status = unsafe {
            rocprof_trace_decoder_quick_scan(
                handle.0,
                index as u64,
                chunk.as_ptr().cast(),
                chunk.len() as u64,
                Some(on_records),
                (&mut transcript as *mut Transcript).cast(),
            )
        };
        assert!(status <= 5, "quick_scan returned {status}");
        assert!(
            transcript.violations.is_empty(),
            "{:?}",
            transcript.violations
        );

        let len = chunk.len() as u64;
        let offset_begin = u64::from(*begin) * len / 256;
        let offset_end = (u64::from(*end) * len / 255).max(offset_begin);
        let room = usize::from(*capacity) * 64;
        let mut out = vec![0xA5u8; room + GUARD];
        let mut size_out = room as u64;
        // SAFETY: `out` holds `size_out` writable bytes (plus the guard).
        let status = unsafe {
            rocprof_trace_decoder_build_standalone(
                handle.0,
                index as u64,
                chunk.as_ptr().cast(),
                len,
                offset_begin,
                offset_end,
                out.as_mut_ptr().cast(),
                &mut size_out,
            )
        };
        assert!(status <= 5, "build_standalone returned {status}");
        assert!(
            out[room..].iter().all(|&b| b == 0xA5),
            "build_standalone wrote past the capacity"
        );
        match status {
            0 => {
                assert!(size_out <= room as u64);
                let mut transcript = Transcript::default();
                let parsed = handle.parse(&out[..size_out as usize], &mut transcript);
                assert!(parsed == 0 || parsed == 4);
                assert!(
                    transcript.violations.is_empty(),
                    "{:?}",
                    transcript.violations
                );
            }
            2 => assert!(
                size_out > room as u64,
                "OUT_OF_RESOURCES must ask for more room"
            ),
            _ => {}
        }
    }
});

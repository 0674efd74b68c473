//! V1 `parse_data` over fuzz bytes cut into SE buffers of fuzz-chosen sizes (each buffer is
//! parsed as a complete trace): a documented status, no fault, well-formed records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocprof_trace_decoder_fuzz::client::{parse_v1, Transcript};
use rocprof_trace_decoder_fuzz::{isa_mode, with_header};

fuzz_target!(|input: &[u8]| {
    let [selector, isa, chunking, payload @ ..] = input else {
        return;
    };
    // Chunk sizes cycle through small and large values picked by the chunking byte; each
    // chunk gets the header when the selector asks for one.
    let sizes = [1usize, 7, 8, 9, 64, 333, 4096, usize::MAX];
    let mut buffers = Vec::new();
    let mut rest = payload;
    let mut turn = usize::from(*chunking);
    while !rest.is_empty() && buffers.len() < 64 {
        let take = sizes[turn % sizes.len()].min(rest.len());
        let (chunk, tail) = rest.split_at(take);
        buffers.push(with_header(*selector, chunk));
        rest = tail;
        turn = turn.wrapping_mul(5).wrapping_add(3);
    }
    let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let (status, client) = parse_v1(&slices, Transcript::default(), isa_mode(*isa));
    assert!(status == 0 || status == 4, "parse_data returned {status}");
    assert!(
        client.transcript.violations.is_empty(),
        "{:?}",
        client.transcript.violations
    );
    assert!(client.isa.longest_retry_chain <= 1);
});

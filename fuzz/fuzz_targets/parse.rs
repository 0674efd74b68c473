//! V2 `parse` of arbitrary bytes behind each architecture's header, with scripted ISA answers
//! and record filters: a status from {SUCCESS, INVALID_SHADER_DATA}, no fault, every record
//! readable and well-formed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocprof_trace_decoder::ffi::handle::rocprof_trace_decoder_set_record_filter;
use rocprof_trace_decoder::records::{RecordFilter, RecordKind, RecordRequest};
use rocprof_trace_decoder_fuzz::client::{IsaScript, OwnedHandle, Transcript};
use rocprof_trace_decoder_fuzz::{isa_mode, with_header};

/// Filter byte: bit 7 keeps the default filter; otherwise bits 0..6 enable record types in
/// groups, bit 6 asks immediate delivery for the types that allow it.
fn filter_requests(control: u8) -> Option<Vec<RecordRequest>> {
    if control & 0x80 != 0 {
        return None;
    }
    let immediate = control & 0x40 != 0;
    let requests = RecordKind::ALL
        .iter()
        .filter(|kind| control >> (**kind as u8 % 6) & 1 != 0)
        .map(|&kind| {
            let pooled_only = !matches!(
                kind,
                RecordKind::ShaderData
                    | RecordKind::Occupancy
                    | RecordKind::Realtime
                    | RecordKind::Marker
            );
            RecordRequest {
                size: std::mem::size_of::<RecordRequest>() as u64,
                kind: kind as u32,
                flags: u32::from(immediate && !pooled_only),
            }
        })
        .collect();
    Some(requests)
}

fuzz_target!(|input: &[u8]| {
    let [selector, isa, filter, payload @ ..] = input else {
        return;
    };
    let trace = with_header(*selector, payload);
    let handle = OwnedHandle::new();
    let mut script = IsaScript::new(isa_mode(*isa));
    assert_eq!(handle.set_isa(&mut script), 0);
    if let Some(requests) = filter_requests(*filter) {
        let c_filter = RecordFilter {
            size: std::mem::size_of::<RecordFilter>() as u64,
            record_count: requests.len() as u64,
            records: requests.as_ptr(),
        };
        // SAFETY: the filter and its array are live for the call.
        let status = unsafe { rocprof_trace_decoder_set_record_filter(handle.0, &c_filter) };
        assert_eq!(status, 0);
    }
    let mut transcript = Transcript::default().answering(i32::from(*filter & 1));
    let status = handle.parse(&trace, &mut transcript);
    assert!(status == 0 || status == 4, "parse returned {status}");
    assert!(
        transcript.violations.is_empty(),
        "{:?}",
        transcript.violations
    );
    assert!(
        script.longest_retry_chain <= 1,
        "OUT_OF_RESOURCES retried {} times",
        script.longest_retry_chain
    );
});

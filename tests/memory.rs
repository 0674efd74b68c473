//! Bounded memory: the decoder's peak heap use while decoding is measured with a counting global
//! allocator. Streaming the same trace through the SE callback again and again (1 GiB of the
//! largest corpus trace in release builds) must not raise the peak over one copy's: nothing the
//! decoder keeps grows with the number of buffers. The bound is documented in README.md ("Memory").

#[path = "common/client.rs"]
mod client;

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use client::{corpus, on_isa_nop, on_se_data, read_corpus, SeFeed, LARGEST_TRACE};
use rocprof_trace_decoder::ffi::parse::rocprof_trace_decoder_parse_data;
use rocprof_trace_decoder::records::RecordKind;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = System.alloc(layout);
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }
    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        System.dealloc(pointer, layout);
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let pointer = System.alloc_zeroed(layout);
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }
    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = System.realloc(pointer, layout, new_size);
        if !moved.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Counts records and keeps nothing, like a client that writes them out. GFXIP, RT_FREQUENCY
/// and INFO come (at most) once per call, not per buffer, and are left out.
unsafe extern "C" fn count_records(
    kind: i32,
    _pointer: *mut c_void,
    count: u64,
    userdata: *mut c_void,
) -> i32 {
    let once_per_call = [RecordKind::Gfxip, RecordKind::RtFrequency, RecordKind::Info];
    if !once_per_call.iter().any(|&once| once as i32 == kind) {
        *userdata.cast::<u64>() += count;
    }
    0
}

struct Client {
    feed: SeFeed,
    records: u64,
}

unsafe extern "C" fn client_se(buffer: *mut *mut u8, size: *mut u64, userdata: *mut c_void) -> u64 {
    on_se_data(
        buffer,
        size,
        (&mut (*userdata.cast::<Client>()).feed as *mut SeFeed).cast(),
    )
}

unsafe extern "C" fn client_records(
    kind: i32,
    pointer: *mut c_void,
    count: u64,
    userdata: *mut c_void,
) -> i32 {
    count_records(
        kind,
        pointer,
        count,
        (&mut (*userdata.cast::<Client>()).records as *mut u64).cast(),
    )
}

/// Decodes `copies` back-to-back copies of `trace` in one V1 call; returns the peak heap
/// growth during the call and the number of records delivered.
fn peak_while_streaming(trace: &[u8], copies: usize) -> (usize, u64) {
    let mut client = Client {
        feed: SeFeed {
            buffers: vec![(trace.as_ptr() as *mut u8, trace.len() as u64); copies],
            next: 0,
        },
        records: 0,
    };
    let baseline = CURRENT.load(Ordering::Relaxed);
    PEAK.store(baseline, Ordering::Relaxed);
    let status = rocprof_trace_decoder_parse_data(
        Some(client_se),
        Some(client_records),
        Some(on_isa_nop),
        (&mut client as *mut Client).cast(),
    );
    assert_eq!(status, 0);
    assert_eq!(client.feed.next, copies);
    (PEAK.load(Ordering::Relaxed) - baseline, client.records)
}

const MIB: usize = 1 << 20;

/// One test, so that no other test's allocations run alongside the measurements.
#[test]
fn peak_memory_does_not_grow_with_the_number_of_buffers() {
    let Some(corpus) = corpus() else { return };
    // 1 GiB of the largest trace; the small RDNA traces take 128 MiB (150 000 buffers and
    // more each). Debug builds stream a sixteenth.
    let scale = if cfg!(debug_assertions) { 16 } else { 1 };
    let cases = [
        (LARGEST_TRACE, 1024 * MIB),
        ("gfx1200/profile_ops_run_0/se1.att", 128 * MIB),
        ("gfx1100/profile_gemm_run_0/se0.att", 128 * MIB),
    ];
    for (name, total) in cases {
        let total = total / scale;
        let trace = read_corpus(&corpus, name);
        let (one, records_one) = peak_while_streaming(&trace, 1);
        let (half, _) = peak_while_streaming(&trace[..trace.len() / 2], 1);
        let copies = total.div_ceil(trace.len()).max(2);
        let (many, records_many) = peak_while_streaming(&trace, copies);
        eprintln!(
            "{name}: {} bytes; peak heap {:.2} MiB for one copy, {:.2} MiB for its first half, \
             {:.2} MiB for {copies} copies ({:.0} MiB streamed)",
            trace.len(),
            one as f64 / MIB as f64,
            half as f64 / MIB as f64,
            many as f64 / MIB as f64,
            (copies * trace.len()) as f64 / MIB as f64
        );
        assert_eq!(
            records_many,
            records_one * copies as u64,
            "{name}: every copy decoded"
        );
        assert!(
            many <= one + MIB / 4,
            "{name}: peak grew from {one} to {many} bytes over {copies} buffers"
        );
    }
}

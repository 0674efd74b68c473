//! `quick_scan` and `build_standalone` through the C ABI, over streams encoded here: the
//! expectations of upstream's `quick_scan_api_test.cpp` (API.md §12.1), chunking, statuses.

use std::ffi::c_void;

use rocprof_trace_decoder::ffi::handle::{
    rocprof_trace_decoder_create_handle, rocprof_trace_decoder_destroy_handle,
    rocprof_trace_decoder_set_record_filter,
};
use rocprof_trace_decoder::ffi::scan::{
    rocprof_trace_decoder_build_standalone, rocprof_trace_decoder_quick_scan,
};
use rocprof_trace_decoder::ffi::types::{Handle, TraceCallback};
use rocprof_trace_decoder::records::{
    Dispatch, Event, Pc, RecordFilter, RecordKind, RecordRequest, DISPATCH_FLAG_IS_CTX_RESTORE,
    DISPATCH_FLAG_SCALAR_CACHE_INVALIDATE, DISPATCH_FLAG_SCRATCH_ENABLED,
    DISPATCH_FLAG_VECTOR_CACHE_INVALIDATE, EVENT_FLAG_BOP, EVENT_FLAG_PER_PIPE,
};

const ME: u64 = 1;
const PIPE: u64 = 2;
const PGM: u64 = 0x1234_5678;
const PC_MASK: u64 = (1 << 48) - 1;
const CODE_OBJECT_BASE: u64 = ((PGM << 8) & PC_MASK) - 0x80;
const CODE_OBJECT_SIZE: u64 = 0x400;
const CODE_OBJECT_ID: u64 = 0x0102_0304_0506_0708;
const DISPATCH_PKT: u64 = 0xabcd_dcba_1234_4321;
/// vgprs 64, scalar and vector cache invalidate, context restore.
const RSRC1: u32 = 7 | 1 << 10 | 1 << 11 | 1 << 14;
/// scratch, 9 user SGPRs, 1536 bytes of LDS.
const RSRC2: u32 = 1 | 9 << 1 | 3 << 15;

const REG_NUM_THREAD_X: u64 = 0x07;
const REG_NUM_THREAD_Y: u64 = 0x08;
const REG_NUM_THREAD_Z: u64 = 0x09;
const REG_PGM_LO: u64 = 0x0C;
const REG_PGM_HI: u64 = 0x0D;
const REG_DISPATCH_PKT_LO: u64 = 0x0E;
const REG_DISPATCH_PKT_HI: u64 = 0x0F;
const REG_PGM_RSRC1: u64 = 0x12;
const REG_PGM_RSRC2: u64 = 0x13;
const REG_PGM_RSRC3: u64 = 0x2D;
const REG_NOWHERE: u64 = 0x7F;
const USERDATA_2: u64 = 0xC342;

const EVENT_CS_PARTIAL_FLUSH: u64 = 0x07;
const EVENT_BOTTOM_OF_PIPE: u64 = 0x28;

#[path = "common/encoder/mod.rs"]
mod encoder;
use encoder::gfx9::{self, Gfx9};
use encoder::rdna::{Header, Rdna};
use rocprof_trace_decoder::arch::rdna::RegWrite;
use rocprof_trace_decoder::testing::Rng;

/// COMPUTE_DISPATCH_INITIATOR's COMPUTE_SHADER_EN: the write starts a dispatch.
const SHADER_ENABLE: u32 = 1;

fn rdna_header(version: u64) -> [u8; 8] {
    Rdna::new(Header::version(version))
        .bytes()
        .try_into()
        .expect("HEADER is 8 bytes")
}

fn rdna_reg(compute: bool, me: u64, pipe: u64, address: u64, data: u32) -> RegWrite {
    RegWrite {
        me: me as u8,
        pipe: pipe as u8,
        compute,
        address,
        data,
    }
}

fn codeobj_words() -> Vec<u32> {
    let header = |kind: u32| 4 | kind << 8;
    let mut words = vec![u32::from_le_bytes([0, b'R', b'O', b'C'])];
    for (kind, payload) in [
        (5, CODE_OBJECT_ID as u32),
        (6, (CODE_OBJECT_ID >> 32) as u32),
        (1, CODE_OBJECT_SIZE as u32),
        (4, 0),
        (2, CODE_OBJECT_BASE as u32),
        (3, (CODE_OBJECT_BASE >> 32) as u32),
        (0, 0b10),
    ] {
        words.extend([header(kind), payload]);
    }
    words
}

fn dispatch_registers() -> [(u64, u32); 10] {
    [
        (REG_PGM_LO, PGM as u32),
        (REG_PGM_HI, (PGM >> 32) as u32),
        (REG_NUM_THREAD_X, 64),
        (REG_NUM_THREAD_Y, 8),
        (REG_NUM_THREAD_Z, 2),
        (REG_PGM_RSRC1, RSRC1),
        (REG_PGM_RSRC2, RSRC2),
        (REG_PGM_RSRC3, 0x55),
        (REG_DISPATCH_PKT_LO, DISPATCH_PKT as u32),
        (REG_DISPATCH_PKT_HI, (DISPATCH_PKT >> 32) as u32),
    ]
}

/// A trace with its cut point (where the event starts) and the dispatch token's offset.
struct DispatchTrace {
    data: Vec<u8>,
    cut: u64,
    dispatch: u64,
}

/// gfx12 (version 4) or MI400 (version 5): registers, a BOP event, a dispatch.
fn rdna_trace(header: Header, code_object: bool) -> DispatchTrace {
    let mut b = Rdna::new(header);
    if code_object {
        for word in codeobj_words() {
            b.reg(rdna_reg(false, 0, 0, USERDATA_2, word));
        }
    }
    for (addr, data) in dispatch_registers() {
        b.reg(rdna_reg(true, ME, PIPE, addr, data));
    }
    let cut = b.byte_len();
    b.event(EVENT_BOTTOM_OF_PIPE, true, ME, PIPE);
    b.dispatch_initiator(ME, PIPE, SHADER_ENABLE);
    DispatchTrace {
        data: b.bytes(),
        cut,
        dispatch: cut + 3,
    }
}

fn gfx12_trace() -> DispatchTrace {
    rdna_trace(Header::version(4), false)
}

fn mi400_trace() -> DispatchTrace {
    rdna_trace(
        Header {
            target_simd: 3,
            target_wgp: 2,
            target_sa: 1,
            ..Header::version(5)
        },
        false,
    )
}

/// MI300 header, 64 zero bytes, code-object markers, registers, CS_PARTIAL_FLUSH, dispatch.
fn gfx9_trace() -> DispatchTrace {
    let mut s = Gfx9::new(gfx9::Header::bare(5));
    // Zero words are MISC tokens that only advance the clock, by nothing.
    s.bytes.resize(s.bytes.len() + 64, 0);
    for word in codeobj_words() {
        s.userdata(0, 0, USERDATA_2, word);
    }
    for (addr, value) in dispatch_registers() {
        s.reg_cs(ME, PIPE, addr, value.into());
    }
    let cut = s.bytes.len() as u64;
    s.reg_cs(ME, PIPE, REG_NOWHERE, 7);
    s.reg_cs(ME, PIPE, 0, 1);
    s.bytes.resize(s.bytes.len() + 32, 0);
    DispatchTrace {
        data: s.bytes,
        cut,
        dispatch: cut + 6,
    }
}

#[derive(Default)]
struct Collected {
    events: Vec<Event>,
    dispatches: Vec<Dispatch>,
    other: Vec<i32>,
}

unsafe extern "C" fn collect(kind: i32, records: *mut c_void, count: u64, ud: *mut c_void) -> i32 {
    let out = &mut *(ud as *mut Collected);
    if kind == RecordKind::Event as i32 {
        out.events.extend_from_slice(std::slice::from_raw_parts(
            records as *const Event,
            count as usize,
        ));
    } else if kind == RecordKind::Dispatch as i32 {
        out.dispatches.extend_from_slice(std::slice::from_raw_parts(
            records as *const Dispatch,
            count as usize,
        ));
    } else {
        out.other.push(kind);
    }
    0
}

unsafe extern "C" fn reject(_: i32, _: *mut c_void, _: u64, _: *mut c_void) -> i32 {
    1
}

struct OwnedHandle(Handle);

impl OwnedHandle {
    fn new() -> Self {
        let mut h = Handle::default();
        assert_eq!(unsafe { rocprof_trace_decoder_create_handle(&mut h) }, 0);
        OwnedHandle(h)
    }
}

impl Drop for OwnedHandle {
    fn drop(&mut self) {
        rocprof_trace_decoder_destroy_handle(self.0);
    }
}

fn quick_scan(h: Handle, chunk: u64, data: &[u8], cb: TraceCallback) -> (i32, Collected) {
    let mut out = Collected::default();
    let status = unsafe {
        rocprof_trace_decoder_quick_scan(
            h,
            chunk,
            data.as_ptr().cast(),
            data.len() as u64,
            cb,
            (&mut out as *mut Collected).cast(),
        )
    };
    (status, out)
}

fn scan_all(data: &[u8]) -> Collected {
    let h = OwnedHandle::new();
    let (status, out) = quick_scan(h.0, 0, data, Some(collect));
    assert_eq!(status, 0);
    out
}

fn standalone(h: Handle, chunk: u64, data: &[u8], begin: u64, out: &mut Vec<u8>) -> i32 {
    let mut size = out.len() as u64;
    let status = unsafe {
        rocprof_trace_decoder_build_standalone(
            h,
            chunk,
            data.as_ptr().cast(),
            data.len() as u64,
            begin,
            data.len() as u64,
            out.as_mut_ptr().cast(),
            &mut size,
        )
    };
    out.resize(size as usize, 0);
    status
}

fn check_dispatch(d: &Dispatch, vgprs: u32, sgprs: u32, lds: u32, entry: Pc) {
    assert_eq!(d.size, 80);
    assert_eq!(d.time, 0);
    assert_eq!((d.me_id, d.pipe_id), (ME as u8, PIPE as u8));
    assert_eq!((d.thread_dim_x, d.thread_dim_y, d.thread_dim_z), (64, 8, 2));
    assert_eq!(d.user_sgprs, 9);
    assert_eq!((d.vgprs, d.sgprs, d.lds_size), (vgprs, sgprs, lds));
    assert_eq!(d.dispatch_pkt_addr, DISPATCH_PKT);
    assert_eq!(d.entry_point, entry);
    assert_eq!(
        d.flags,
        DISPATCH_FLAG_SCALAR_CACHE_INVALIDATE
            | DISPATCH_FLAG_VECTOR_CACHE_INVALIDATE
            | DISPATCH_FLAG_IS_CTX_RESTORE
            | DISPATCH_FLAG_SCRATCH_ENABLED
    );
}

const RAW_ENTRY: Pc = Pc::new((PGM << 8) & PC_MASK, 0);
const MARKED_ENTRY: Pc = Pc::new(0x80, CODE_OBJECT_ID);

fn check_gfx12_dispatch(d: &Dispatch) {
    check_dispatch(d, 64, 128, 1536, RAW_ENTRY);
}

fn check_mi400_dispatch(d: &Dispatch) {
    check_dispatch(d, 128, 128, 3072, RAW_ENTRY);
}

fn check_gfx9_dispatch(d: &Dispatch) {
    check_dispatch(d, 64, 16, 1536, MARKED_ENTRY);
}

#[test]
fn gfx12_trace_reports_one_event_and_one_dispatch() {
    let trace = gfx12_trace();
    let out = scan_all(&trace.data);
    assert_eq!(out.events.len(), 1);
    let e = &out.events[0];
    assert_eq!((e.size, e.time, e.kind), (40, 0, 2));
    assert_eq!((e.me_id, e.pipe_id), (ME as u8, PIPE as u8));
    assert_eq!(e.flags, EVENT_FLAG_PER_PIPE | EVENT_FLAG_BOP);
    assert_eq!(unsafe { e.payload.raw }, 0);
    assert_eq!(e.byte_offset, trace.cut);
    assert_eq!(out.dispatches.len(), 1);
    check_gfx12_dispatch(&out.dispatches[0]);
    assert_eq!(out.dispatches[0].byte_offset, trace.dispatch);
    assert!(out.other.is_empty(), "only EVENT and DISPATCH records");
}

#[test]
fn mi400_trace_doubles_vgprs_and_lds() {
    let trace = mi400_trace();
    let out = scan_all(&trace.data);
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.events[0].kind, 2);
    assert_eq!(out.events[0].byte_offset, trace.cut);
    assert_eq!(out.dispatches.len(), 1);
    check_mi400_dispatch(&out.dispatches[0]);
    assert_eq!(out.dispatches[0].byte_offset, trace.dispatch);
}

#[test]
fn gfx9_trace_reports_the_partial_flush_and_a_code_object_entry() {
    let trace = gfx9_trace();
    let out = scan_all(&trace.data);
    assert_eq!(out.events.len(), 1);
    let e = &out.events[0];
    assert_eq!((e.kind, e.flags, e.time), (1, 0, 0));
    assert_eq!((e.me_id, e.pipe_id), (ME as u8, PIPE as u8));
    assert_eq!(e.byte_offset, trace.cut);
    assert_eq!(out.dispatches.len(), 1);
    check_gfx9_dispatch(&out.dispatches[0]);
    assert_eq!(out.dispatches[0].byte_offset, trace.dispatch);
}

#[test]
fn gfx12_event_ids_map_to_event_kinds() {
    let mut b = Rdna::new(Header::version(4));
    for id in [EVENT_CS_PARTIAL_FLUSH, 0x04, 0x06, 0x14, 0x16, 0x36] {
        b.event(id, false, ME, PIPE);
    }
    b.event(0x35, false, ME, PIPE);
    b.event(EVENT_BOTTOM_OF_PIPE, true, ME, PIPE);
    let out = scan_all(&b.bytes());
    let kinds: Vec<u32> = out.events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [1, 5, 5, 5, 5, 11, 2], "id 0x35 is not reported");
    assert_eq!(out.events[6].flags, EVENT_FLAG_PER_PIPE | EVENT_FLAG_BOP);
    assert_eq!(out.events[0].flags, EVENT_FLAG_PER_PIPE);
}

#[test]
fn chunks_continue_from_the_published_state() {
    let trace = gfx12_trace();
    let h = OwnedHandle::new();
    let (status, out) = quick_scan(h.0, 0, &trace.data[..8], Some(collect));
    assert_eq!((status, out.dispatches.len()), (0, 0));
    let (status, out) = quick_scan(h.0, 1, &trace.data[8..], Some(collect));
    assert_eq!(status, 0);
    assert_eq!(out.dispatches.len(), 1);
    check_gfx12_dispatch(&out.dispatches[0]);
    assert_eq!(out.dispatches[0].byte_offset, trace.dispatch - 8);

    // Split inside the register block: chunk 1 needs chunk 0's registers.
    let split = 8 + 5 * 8;
    let (status, first) = quick_scan(h.0, 0, &trace.data[..split], Some(collect));
    assert_eq!((status, first.dispatches.len()), (0, 0));
    let (status, second) = quick_scan(h.0, 1, &trace.data[split..], Some(collect));
    assert_eq!(status, 0);
    check_gfx12_dispatch(&second.dispatches[0]);
}

#[test]
fn a_chunk_without_its_predecessor_times_out() {
    let trace = gfx12_trace();
    let h = OwnedHandle::new();
    let (status, _) = quick_scan(h.0, 5, &trace.data, Some(collect));
    assert_eq!(status, 2);
}

#[test]
fn a_waiting_chunk_picks_up_a_state_published_meanwhile() {
    let trace = gfx12_trace();
    let h = OwnedHandle::new();
    // Chunk 0 makes the family known; chunk 2 then waits for chunk 1's end state.
    assert_eq!(quick_scan(h.0, 0, &trace.data[..8], Some(collect)).0, 0);
    let split = 8 + 6 * 8;
    let handle = h.0;
    let rest = trace.data[split..].to_vec();
    let waiter = std::thread::spawn(move || quick_scan(handle, 2, &rest, Some(collect)));
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        quick_scan(h.0, 1, &trace.data[8..split], Some(collect)).0,
        0
    );
    let (status, out) = waiter.join().unwrap();
    assert_eq!((status, out.dispatches.len()), (0, 1));
    check_gfx12_dispatch(&out.dispatches[0]);
}

#[test]
fn api_errors_and_callback_status() {
    let trace = gfx12_trace();
    let h = OwnedHandle::new();
    assert_eq!(quick_scan(h.0, 0, &trace.data, None).0, 3, "NULL callback");
    assert_eq!(quick_scan(h.0, 0, &trace.data, Some(reject)).0, 1);
    assert_eq!(
        quick_scan(Handle { handle: 0 }, 0, &trace.data, Some(collect)).0,
        3
    );
    assert_eq!(quick_scan(h.0, 0, &trace.data[..7], Some(collect)).0, 3);
    let empty = unsafe {
        rocprof_trace_decoder_quick_scan(
            Handle { handle: 0 },
            0,
            std::ptr::null(),
            0,
            None,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(empty, 0, "no data: nothing to do, no handle check");
    let gfx9_header = gfx9::Header::bare(5).word().to_le_bytes();
    assert_eq!(quick_scan(h.0, 0, &gfx9_header, Some(collect)).0, 0);
    // gfx11 headers are not scanned.
    let gfx11 = Rdna::new(Header::version(3))
        .reg(rdna_reg(true, ME, PIPE, 0, 1))
        .bytes();
    let (status, out) = quick_scan(h.0, 0, &gfx11, Some(collect));
    assert_eq!((status, out.events.len(), out.dispatches.len()), (0, 0, 0));
}

#[test]
fn the_record_filter_applies() {
    let trace = gfx12_trace();
    let h = OwnedHandle::new();
    let request = RecordRequest {
        size: 16,
        kind: RecordKind::Dispatch as u32,
        flags: 0,
    };
    let filter = RecordFilter {
        size: 24,
        records: &request,
        record_count: 1,
    };
    assert_eq!(
        unsafe { rocprof_trace_decoder_set_record_filter(h.0, &filter) },
        0
    );
    let (status, out) = quick_scan(h.0, 0, &trace.data, Some(collect));
    assert_eq!((status, out.events.len(), out.dispatches.len()), (0, 0, 1));
}

/// Cuts at the event, checks the output's shape and that scanning it gives the dispatch back.
fn cut_and_rescan(trace: &DispatchTrace) -> Collected {
    let h = OwnedHandle::new();
    let mut tiny = vec![0u8; 1];
    assert_eq!(standalone(h.0, 0, &trace.data, trace.cut, &mut tiny), 2);
    let slice = &trace.data[trace.cut as usize..];
    assert!(tiny.len() > slice.len() + 8, "required size reported");
    let mut out = vec![0u8; tiny.len()];
    assert_eq!(standalone(h.0, 0, &trace.data, trace.cut, &mut out), 0);
    assert_eq!(out.len(), tiny.len());
    assert_eq!(out[..8], trace.data[..8], "the original header");
    assert!(out.ends_with(slice), "the verbatim slice");
    scan_all(&out)
}

#[test]
fn standalone_cuts_replay_the_dispatch_context() {
    let out = cut_and_rescan(&gfx12_trace());
    assert_eq!(out.dispatches.len(), 1);
    check_gfx12_dispatch(&out.dispatches[0]);

    let out = cut_and_rescan(&rdna_trace(Header::version(4), true));
    assert_eq!(out.dispatches.len(), 1);
    check_dispatch(&out.dispatches[0], 64, 128, 1536, MARKED_ENTRY);

    let out = cut_and_rescan(&mi400_trace());
    check_mi400_dispatch(&out.dispatches[0]);

    let out = cut_and_rescan(&gfx9_trace());
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.events[0].kind, 1);
    check_gfx9_dispatch(&out.dispatches[0]);
}

#[test]
fn gfx9_standalone_skips_the_chunk_header() {
    let trace = gfx9_trace();
    let h = OwnedHandle::new();
    let mut from_start = vec![0u8; trace.data.len() + 512];
    let mut from_tokens = from_start.clone();
    assert_eq!(standalone(h.0, 0, &trace.data, 0, &mut from_start), 0);
    assert_eq!(standalone(h.0, 0, &trace.data, 8, &mut from_tokens), 0);
    assert_eq!(from_start, from_tokens);
    let out = scan_all(&from_start);
    assert_eq!((out.events.len(), out.dispatches.len()), (1, 1));
    check_gfx9_dispatch(&out.dispatches[0]);
}

#[test]
fn standalone_statuses() {
    let trace = gfx12_trace();
    let h = OwnedHandle::new();
    let mut out = vec![0u8; 128];
    assert_eq!(
        standalone(h.0, 1, &trace.data, trace.cut, &mut out),
        3,
        "no state for chunk 1"
    );
    let mut size = 128u64;
    let call = |data: &[u8], begin: u64, end: u64, out: *mut c_void, size: *mut u64| unsafe {
        rocprof_trace_decoder_build_standalone(
            h.0,
            0,
            data.as_ptr().cast(),
            data.len() as u64,
            begin,
            end,
            out,
            size,
        )
    };
    let len = trace.data.len() as u64;
    let buf = out.as_mut_ptr().cast();
    assert_eq!(
        call(&trace.data, trace.cut, len, std::ptr::null_mut(), &mut size),
        3
    );
    assert_eq!(
        call(&trace.data, trace.cut, len, buf, std::ptr::null_mut()),
        3
    );
    assert_eq!(
        call(&trace.data, 10, 18, buf, &mut size),
        3,
        "begin + 8 must stay below end"
    );
    assert_eq!(
        call(&trace.data, 0, len + 1, buf, &mut size),
        3,
        "end past the data"
    );
    assert_eq!(
        call(&trace.data, u64::MAX - 4, len, buf, &mut size),
        3,
        "no wrap-around"
    );
    assert_eq!(
        call(&trace.data[..8], 0, 8, buf, &mut size),
        3,
        "8 bytes hold no tokens"
    );
    // No generation has HEADER version 6.
    let mut unknown = Header::version(6).word().to_le_bytes().to_vec();
    unknown.resize(32, 0);
    assert_eq!(call(&unknown, 8, 32, buf, &mut size), 5);
    assert_eq!(size, 128, "size_out untouched by failures");
}

#[test]
fn standalone_of_a_later_chunk_uses_its_published_state() {
    let trace = gfx12_trace();
    let h = OwnedHandle::new();
    let split = 8 + 6 * 8;
    assert_eq!(quick_scan(h.0, 0, &trace.data[..split], Some(collect)).0, 0);
    let chunk1 = &trace.data[split..];
    let mut out = vec![0u8; 4096];
    // The cut starts at the event; the prefix of chunk 1 holds the remaining registers.
    let begin = trace.cut - split as u64;
    assert_eq!(standalone(h.0, 1, chunk1, begin, &mut out), 0);
    assert_eq!(out[..8], trace.data[..8], "chunk 0's header");
    let rescanned = scan_all(&out);
    check_gfx12_dispatch(&rescanned.dispatches[0]);
}

/// Garbage after each supported header, split into chunks and cut at random ranges: every call
/// returns a documented status (a panic would come back as ERROR, 1).
#[test]
fn garbage_never_breaks_scan_or_cut() {
    let mut rng = Rng(0x5EED_0F5C_A7F0);
    let headers = [
        gfx9::Header::bare(5).word().to_le_bytes(),
        rdna_header(4),
        rdna_header(5),
        rdna_header(3),
    ];
    for round in 0..200 {
        let mut data = headers[round % headers.len()].to_vec();
        let len = rng.below(4096);
        data.extend((0..len).map(|_| rng.next_u64() as u8));
        let h = OwnedHandle::new();
        let split = 8 + rng.below(len + 1);
        let (status, _) = quick_scan(h.0, 0, &data[..split], Some(collect));
        assert_eq!(status, 0);
        if split < data.len() {
            let (status, _) = quick_scan(h.0, 1, &data[split..], Some(collect));
            assert!(matches!(status, 0 | 3), "status {status}");
        }
        for chunk in [0, 1, 2] {
            let begin = rng.below(data.len()) as u64;
            let end = begin + rng.below(data.len() - begin as usize + 1) as u64;
            let mut size = rng.below(8192) as u64;
            let mut out = vec![0u8; size as usize];
            let status = unsafe {
                rocprof_trace_decoder_build_standalone(
                    h.0,
                    chunk,
                    data.as_ptr().cast(),
                    data.len() as u64,
                    begin,
                    end,
                    out.as_mut_ptr().cast(),
                    &mut size,
                )
            };
            assert!(matches!(status, 0 | 2 | 3 | 5), "status {status}");
        }
    }
}

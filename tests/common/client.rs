//! A C client written in Rust: callbacks with the exact C signatures, driven through the
//! exported `rocprof_trace_decoder_*` functions. Shared by the robustness tests and the fuzz
//! targets (`fuzz/src/lib.rs` includes this file).
//!
//! Every record delivered is read in full (wave arrays and marker strings included), so a
//! pointer or count the decoder gets wrong shows up as a fault under ASan or valgrind, and its
//! fields (never its padding, which the ABI leaves undefined) go into a transcript that runs
//! can be compared by.

#![allow(dead_code)]

use std::ffi::{c_char, c_void, CStr};
use std::fmt::{Debug, Write};

use rocprof_trace_decoder::ffi::caught_panics;
use rocprof_trace_decoder::ffi::handle::{
    rocprof_trace_decoder_create_handle, rocprof_trace_decoder_destroy_handle,
    rocprof_trace_decoder_set_isa_callback, rocprof_trace_decoder_set_se_data_callback,
};
use rocprof_trace_decoder::ffi::parse::{
    rocprof_trace_decoder_parse, rocprof_trace_decoder_parse_data,
};
use rocprof_trace_decoder::ffi::types::Handle;
use rocprof_trace_decoder::records::{
    Dispatch, Event, Inst, InstOtherSimd, Marker, Occupancy, Pc, PerfEvent, Realtime, RecordKind,
    ShaderData, Wave, WaveState,
};
use rocprof_trace_decoder::sink::check;

/// One trace callback: its record type and the fields of every record it carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub kind: i32,
    pub count: u64,
    pub text: String,
    /// A wave's instructions.
    pub instructions: Vec<Inst>,
}

/// What the trace callback saw during one parse call.
#[derive(Default)]
pub struct Transcript {
    /// Keep every delivery (tests); the fuzz targets only read the records.
    pub keep: bool,
    /// What the trace callback answers (the full parse must ignore it).
    pub answer: i32,
    pub deliveries: Vec<Delivery>,
    pub callbacks: u64,
    /// Callbacks that broke the record contract (unknown type, NULL array with records, ...).
    pub violations: Vec<String>,
}

/// Every decode a test makes through this client is held to the record contract and to "no
/// panic caught at the C boundary" (a caught panic reaches a client only as an error status, so
/// a test that accepts that status would otherwise pass on it).
impl Drop for Transcript {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        assert!(
            self.violations.is_empty(),
            "records that break the ABI: {:?}",
            self.violations
        );
        assert_eq!(
            caught_panics(),
            0,
            "the library caught a panic at its C boundary"
        );
    }
}

impl Transcript {
    /// The trace callback answers `answer` (the full parse must ignore it).
    pub fn answering(mut self, answer: i32) -> Self {
        self.answer = answer;
        self
    }

    pub fn keeping() -> Self {
        let mut transcript = Self::default();
        transcript.keep = true;
        transcript
    }

    pub fn of_kind(&self, kind: RecordKind) -> impl Iterator<Item = &Delivery> {
        self.deliveries
            .iter()
            .filter(move |d| d.kind == kind as i32)
    }

    pub fn count(&self, kind: RecordKind) -> usize {
        self.of_kind(kind).count()
    }
}

/// Appends the fields of `value`.
fn push_fields<T: Debug>(out: &mut String, value: &T) {
    let _ = write!(out, "{value:?};");
}

/// Reads `count` records of type `T` at `pointer` into `out`.
///
/// # Safety
/// `pointer` holds `count` records of type `T` when non-null.
unsafe fn read_array<T: Debug>(
    pointer: *const T,
    count: u64,
    out: &mut String,
    violations: &mut Vec<String>,
    what: &str,
) {
    if count == 0 {
        return;
    }
    if pointer.is_null() || !(pointer as usize).is_multiple_of(std::mem::align_of::<T>()) {
        violations.push(format!(
            "{what}: {count} records at bad pointer {pointer:?}"
        ));
        return;
    }
    if count > (1 << 28) {
        violations.push(format!("{what}: absurd count {count}"));
        return;
    }
    for item in std::slice::from_raw_parts(pointer, count as usize) {
        push_fields(out, item);
    }
}

/// Marker records carry C strings; the transcript takes their text instead of the pointers.
unsafe fn read_markers(
    pointer: *const Marker,
    count: u64,
    out: &mut String,
    violations: &mut Vec<String>,
) {
    let mut raw = String::new();
    read_array(pointer, count, &mut raw, violations, "MARKER");
    if raw.is_empty() {
        return;
    }
    for marker in std::slice::from_raw_parts(pointer, count as usize) {
        let mut copy = *marker;
        for text in [copy.name, copy.source_location] {
            if !text.is_null() {
                out.push_str(&CStr::from_ptr(text).to_string_lossy());
            }
            out.push(';');
        }
        copy.name = std::ptr::null();
        copy.source_location = std::ptr::null();
        push_fields(out, &copy);
    }
}

/// Waves carry two arrays; the transcript takes their contents instead of the pointers.
unsafe fn read_wave(
    pointer: *const Wave,
    out: &mut String,
    instructions: &mut Vec<Inst>,
    violations: &mut Vec<String>,
) {
    let mut raw = String::new();
    read_array(pointer, 1, &mut raw, violations, "WAVE");
    if raw.is_empty() {
        return;
    }
    let mut wave = *pointer;
    if wave.instructions_size != 0
        && !wave.instructions_array.is_null()
        && wave.instructions_size < (1 << 28)
    {
        instructions.extend_from_slice(std::slice::from_raw_parts(
            wave.instructions_array,
            wave.instructions_size as usize,
        ));
    }
    read_array::<Inst>(
        wave.instructions_array,
        wave.instructions_size,
        out,
        violations,
        "WAVE instructions",
    );
    read_array::<WaveState>(
        wave.timeline_array,
        wave.timeline_size,
        out,
        violations,
        "WAVE timeline",
    );
    wave.instructions_array = std::ptr::null();
    wave.timeline_array = std::ptr::null();
    push_fields(out, &wave);
}

/// The trace callback: reads every record of the batch into the [`Transcript`] at `userdata`.
///
/// # Safety
/// `userdata` is a `*mut Transcript`.
pub unsafe extern "C" fn on_records(
    kind: i32,
    pointer: *mut c_void,
    count: u64,
    userdata: *mut c_void,
) -> i32 {
    let transcript = &mut *userdata.cast::<Transcript>();
    transcript.callbacks += 1;
    if let Err(violation) = check::delivery(kind, pointer, count) {
        transcript.violations.push(violation);
    }
    let mut bytes = String::new();
    let mut instructions = Vec::new();
    let violations = &mut transcript.violations;
    match RecordKind::from_raw(kind as u32) {
        Some(RecordKind::Gfxip) => push_fields(&mut bytes, &(pointer as usize)),
        Some(RecordKind::Occupancy) => read_array(
            pointer as *const Occupancy,
            count,
            &mut bytes,
            violations,
            "OCCUPANCY",
        ),
        Some(RecordKind::PerfEvent) => read_array(
            pointer as *const PerfEvent,
            count,
            &mut bytes,
            violations,
            "PERFEVENT",
        ),
        Some(RecordKind::Wave) => {
            read_wave(
                pointer as *const Wave,
                &mut bytes,
                &mut instructions,
                violations,
            );
        }
        Some(RecordKind::Info) => {
            read_array(pointer as *const u32, count, &mut bytes, violations, "INFO");
        }
        Some(RecordKind::Event) => read_array(
            pointer as *const Event,
            count,
            &mut bytes,
            violations,
            "EVENT",
        ),
        Some(RecordKind::ShaderData) => read_array(
            pointer as *const ShaderData,
            count,
            &mut bytes,
            violations,
            "SHADERDATA",
        ),
        Some(RecordKind::Realtime) => read_array(
            pointer as *const Realtime,
            count,
            &mut bytes,
            violations,
            "REALTIME",
        ),
        Some(RecordKind::RtFrequency) => {
            read_array(
                pointer as *const u64,
                count,
                &mut bytes,
                violations,
                "RT_FREQUENCY",
            );
        }
        Some(RecordKind::InstOtherSimd) => read_array(
            pointer as *const InstOtherSimd,
            count,
            &mut bytes,
            violations,
            "INST_OTHER_SIMD",
        ),
        Some(RecordKind::Dispatch) => read_array(
            pointer as *const Dispatch,
            count,
            &mut bytes,
            violations,
            "DISPATCH",
        ),
        Some(RecordKind::Marker) => {
            read_markers(pointer as *const Marker, count, &mut bytes, violations)
        }
        None => violations.push(format!("unknown record type {kind}")),
    }
    if transcript.keep {
        transcript.deliveries.push(Delivery {
            kind,
            count,
            text: bytes,
            instructions,
        });
    }
    transcript.answer
}

/// How the ISA callback answers (its userdata is a `*mut IsaScript`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsaMode {
    /// Every PC is a 4-byte `v_nop` (the corpus's "vnop" variant).
    Nop,
    /// Texts of many instruction classes chosen by a hash of the PC and `seed`, with sizes 0, 4
    /// and 8, so the stitcher sees branches, waits, barriers and ends on any input.
    Mixed { seed: u8 },
    /// Every call fails with this status.
    Fail(i32),
    /// Succeeds with an empty text and `memory_size` 0.
    Empty,
    /// Asks for `size` bytes of capacity (OUT_OF_RESOURCES) on every call, forever.
    AlwaysMore { size: u64 },
    /// Asks for more once with `first`, then (on the retry) for `second`.
    Shrinking { first: u64, second: u64 },
    /// Answers `v_nop` but claims to have written `size` bytes and an encoding of `memory_size`.
    Lying { size: u64, memory_size: u64 },
    /// Answers a text of `size` bytes (asking for room where it does not fit), 4-byte encoding.
    Long { size: usize },
}

pub struct IsaScript {
    pub mode: IsaMode,
    pub calls: u64,
    /// Capacities offered, to check that the decoder never offers what it does not have.
    pub largest_offer: u64,
    /// The capacity offered at each call, in order.
    pub offers: Vec<u64>,
    /// The longest run of retries: calls for one PC offering more room than the call before,
    /// which answered OUT_OF_RESOURCES. The decoder retries once, so this stays at most 1 (a
    /// decoder retrying forever grows it).
    pub longest_retry_chain: u64,
    retry_chain: u64,
    /// How many calls in a row asked for the current PC.
    run: u64,
    /// The PC, the offered capacity and the status of the last call.
    last: Option<(Pc, u64, i32)>,
}

impl IsaScript {
    pub fn new(mode: IsaMode) -> Self {
        IsaScript {
            mode,
            calls: 0,
            largest_offer: 0,
            offers: Vec::new(),
            longest_retry_chain: 0,
            retry_chain: 0,
            run: 0,
            last: None,
        }
    }
}

const MIXED_TEXTS: &[(&str, u64)] = &[
    ("v_nop", 4),
    ("s_nop 0", 4),
    ("v_mov_b32 v0, v1", 4),
    ("s_mov_b32 s0, s1", 4),
    ("s_waitcnt vmcnt(0)", 4),
    ("s_wait_loadcnt 0x0", 4),
    ("global_load_b32 v0, v1, s[0:1]", 8),
    ("buffer_load_dword v0, off, s[0:3], 0", 8),
    ("ds_read_b32 v0, v1", 8),
    ("s_load_dwordx2 s[0:1], s[4:5], 0x0", 8),
    ("s_branch 3", 4),
    ("s_cbranch_scc0 -2", 4),
    ("s_cbranch_execz 65535", 4),
    ("s_setpc_b64 s[0:1]", 4),
    ("s_barrier", 4),
    ("s_barrier_wait 0xffff", 4),
    ("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]", 8),
    ("s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)", 4),
    ("s_endpgm", 0),
    (".long 0xdeadbeef", 4),
    ("", 4),
];

fn mixed_answer(pc: Pc, seed: u8) -> (&'static str, u64) {
    let mut h = pc.address ^ pc.code_object_id.rotate_left(17) ^ u64::from(seed) << 56;
    h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    MIXED_TEXTS[(h >> 59) as usize % MIXED_TEXTS.len()]
}

/// Writes `text` into the decoder's buffer, or asks for room (status 2) when it does not fit.
unsafe fn answer(
    text: &str,
    memory_size: u64,
    out: *mut c_char,
    memory: *mut u64,
    size: *mut u64,
) -> i32 {
    let capacity = *size;
    *memory = memory_size;
    if text.len() as u64 > capacity {
        *size = text.len() as u64;
        return 2;
    }
    std::ptr::copy_nonoverlapping(text.as_ptr(), out.cast::<u8>(), text.len());
    *size = text.len() as u64;
    0
}

/// The ISA callback, scripted by the [`IsaScript`] at `userdata`.
///
/// # Safety
/// `userdata` is a `*mut IsaScript`; the other pointers are the decoder's.
pub unsafe extern "C" fn on_isa(
    text: *mut c_char,
    memory_size: *mut u64,
    size: *mut u64,
    pc: Pc,
    userdata: *mut c_void,
) -> i32 {
    let script = &mut *userdata.cast::<IsaScript>();
    script.calls += 1;
    script.largest_offer = script.largest_offer.max(*size);
    script.offers.push(*size);
    // Touch the whole buffer offered: under ASan or valgrind an offer larger than the buffer
    // faults here.
    if *size > 0 && *size < (1 << 24) {
        std::ptr::write_bytes(text.cast::<u8>(), b' ', *size as usize);
    }
    let offer = *size;
    match script.last {
        Some((last_pc, last_offer, status)) if last_pc == pc => {
            script.run += 1;
            let retry = status == 2 && offer > last_offer;
            script.retry_chain = if retry { script.retry_chain + 1 } else { 0 };
        }
        _ => {
            script.run = 1;
            script.retry_chain = 0;
        }
    }
    script.longest_retry_chain = script.longest_retry_chain.max(script.retry_chain);
    let status = scripted_answer(script, text, memory_size, size, pc);
    script.last = Some((pc, offer, status));
    status
}

unsafe fn scripted_answer(
    script: &IsaScript,
    text: *mut c_char,
    memory_size: *mut u64,
    size: *mut u64,
    pc: Pc,
) -> i32 {
    match script.mode {
        IsaMode::Nop => answer("v_nop", 4, text, memory_size, size),
        IsaMode::Mixed { seed } => {
            let (line, bytes) = mixed_answer(pc, seed);
            answer(line, bytes, text, memory_size, size)
        }
        IsaMode::Fail(status) => status,
        IsaMode::Empty => answer("", 0, text, memory_size, size),
        IsaMode::AlwaysMore { size: wanted } => {
            *size = wanted;
            2
        }
        IsaMode::Shrinking { first, second } => {
            *size = if script.run == 1 { first } else { second };
            2
        }
        IsaMode::Lying {
            size: claimed,
            memory_size: claimed_memory,
        } => {
            let status = answer("v_nop", claimed_memory, text, memory_size, size);
            *size = claimed;
            status
        }
        IsaMode::Long { size: length } => {
            let line = "v_nop ".repeat(length.div_ceil(6));
            answer(&line[..length], 4, text, memory_size, size)
        }
    }
}

/// Hands out a list of buffers, one per call, then ends the stream.
pub struct SeFeed {
    pub buffers: Vec<(*mut u8, u64)>,
    pub next: usize,
}

/// The SE-data callback over an [`SeFeed`] at `userdata`.
///
/// # Safety
/// `userdata` is a `*mut SeFeed` whose buffers outlive the parse call.
pub unsafe extern "C" fn on_se_data(
    buffer: *mut *mut u8,
    size: *mut u64,
    userdata: *mut c_void,
) -> u64 {
    let feed = &mut *userdata.cast::<SeFeed>();
    let Some(&(pointer, length)) = feed.buffers.get(feed.next) else {
        return 0;
    };
    feed.next += 1;
    *buffer = pointer;
    *size = length;
    1
}

/// V1 `parse_data` needs one userdata for all three callbacks.
#[repr(C)]
pub struct V1Client {
    pub feed: SeFeed,
    pub transcript: Transcript,
    pub isa: IsaScript,
}

unsafe extern "C" fn v1_se(buffer: *mut *mut u8, size: *mut u64, userdata: *mut c_void) -> u64 {
    let client = &mut *userdata.cast::<V1Client>();
    on_se_data(buffer, size, (&mut client.feed as *mut SeFeed).cast())
}

unsafe extern "C" fn v1_records(
    kind: i32,
    pointer: *mut c_void,
    count: u64,
    userdata: *mut c_void,
) -> i32 {
    let client = &mut *userdata.cast::<V1Client>();
    on_records(
        kind,
        pointer,
        count,
        (&mut client.transcript as *mut Transcript).cast(),
    )
}

unsafe extern "C" fn v1_isa(
    text: *mut c_char,
    memory: *mut u64,
    size: *mut u64,
    pc: Pc,
    userdata: *mut c_void,
) -> i32 {
    let client = &mut *userdata.cast::<V1Client>();
    on_isa(
        text,
        memory,
        size,
        pc,
        (&mut client.isa as *mut IsaScript).cast(),
    )
}

/// V1: decodes `buffers` (each a complete trace) through `parse_data`.
pub fn parse_v1(buffers: &[&[u8]], transcript: Transcript, isa: IsaMode) -> (i32, V1Client) {
    let feed = SeFeed {
        buffers: buffers
            .iter()
            .map(|b| (b.as_ptr() as *mut u8, b.len() as u64))
            .collect(),
        next: 0,
    };
    parse_v1_feed(feed, transcript, isa)
}

/// V1 over raw buffer descriptions (NULL pointers and lying sizes included).
pub fn parse_v1_feed(feed: SeFeed, transcript: Transcript, isa: IsaMode) -> (i32, V1Client) {
    let mut client = V1Client {
        feed,
        transcript,
        isa: IsaScript::new(isa),
    };
    let status = rocprof_trace_decoder_parse_data(
        Some(v1_se),
        Some(v1_records),
        Some(v1_isa),
        (&mut client as *mut V1Client).cast(),
    );
    (status, client)
}

/// A decoder handle destroyed on drop.
pub struct OwnedHandle(pub Handle);

impl OwnedHandle {
    pub fn new() -> Self {
        let mut handle = Handle::default();
        // SAFETY: `handle` is writable.
        let status = unsafe { rocprof_trace_decoder_create_handle(&mut handle) };
        assert_eq!(status, 0, "create_handle");
        OwnedHandle(handle)
    }

    /// Sets the ISA callback to `script` (which must outlive the parse calls).
    pub fn set_isa(&self, script: &mut IsaScript) -> i32 {
        rocprof_trace_decoder_set_isa_callback(
            self.0,
            Some(on_isa),
            (script as *mut IsaScript).cast(),
        )
    }

    /// Sets the stateless, thread-safe [`on_isa_nop`] callback.
    pub fn set_isa_nop(&self) -> i32 {
        rocprof_trace_decoder_set_isa_callback(self.0, Some(on_isa_nop), std::ptr::null_mut())
    }

    pub fn set_se_feed(&self, feed: Option<&mut SeFeed>) -> i32 {
        match feed {
            Some(feed) => rocprof_trace_decoder_set_se_data_callback(
                self.0,
                Some(on_se_data),
                (feed as *mut SeFeed).cast(),
            ),
            None => rocprof_trace_decoder_set_se_data_callback(self.0, None, std::ptr::null_mut()),
        }
    }

    /// V2: decodes `data` as one buffer into `transcript`.
    pub fn parse(&self, data: &[u8], transcript: &mut Transcript) -> i32 {
        self.parse_raw(data.as_ptr(), data.len() as u64, transcript)
    }

    pub fn parse_raw(&self, data: *const u8, size: u64, transcript: &mut Transcript) -> i32 {
        // SAFETY: callers pass a pointer to `size` readable bytes, or NULL.
        unsafe {
            rocprof_trace_decoder_parse(
                self.0,
                data.cast(),
                size,
                Some(on_records),
                (transcript as *mut Transcript).cast(),
            )
        }
    }
}

impl Default for OwnedHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for OwnedHandle {
    fn drop(&mut self) {
        rocprof_trace_decoder_destroy_handle(self.0);
    }
}

/// V2 with an ISA script on a fresh handle: the usual one-shot decode of one buffer.
pub fn parse_v2(data: &[u8], transcript: Transcript, isa: IsaMode) -> (i32, Transcript, IsaScript) {
    let handle = OwnedHandle::new();
    let mut script = IsaScript::new(isa);
    assert_eq!(handle.set_isa(&mut script), 0);
    let mut transcript = transcript;
    let status = handle.parse(data, &mut transcript);
    drop(handle);
    (status, transcript, script)
}

/// The first 8 bytes of a trace of each architecture the decoder knows.
pub fn headers() -> Vec<(&'static str, [u8; 8])> {
    let gfx9_header = |version: u64| gfx9::Header::new(version, 0).word().to_le_bytes();
    let rdna_header = |base: u64, version: u64| rdna::with_version(base, version).to_le_bytes();
    const GFX11: u64 = 0x6890_0191;
    const GFX12: u64 = 0x0913_1008_6870_0211;
    vec![
        ("mi200", gfx9_header(4)),
        ("mi300", gfx9_header(5)),
        ("mi350", gfx9_header(6)),
        ("gfx10.1", rdna_header(GFX11, 1)),
        ("gfx10.3", rdna_header(GFX11, 2)),
        ("gfx11", rdna_header(GFX11, 3)),
        ("gfx12", rdna_header(GFX12, 4)),
        ("gfx12.5", rdna_header(GFX12, 5)),
    ]
}

/// A stateless ISA callback answering `v_nop` (4 bytes) for every PC: safe to share between
/// threads, unlike the scripted [`on_isa`].
///
/// # Safety
/// The pointers are the decoder's.
pub unsafe extern "C" fn on_isa_nop(
    text: *mut c_char,
    memory_size: *mut u64,
    size: *mut u64,
    _pc: Pc,
    _userdata: *mut c_void,
) -> i32 {
    answer("v_nop", 4, text, memory_size, size)
}

#[path = "encoder/mod.rs"]
pub mod encoder;
use encoder::{gfx9, rdna};

/// The shared corpus, as every test finds it.
#[path = "corpus.rs"]
mod corpus_folder;
// Not every test that includes this file reads the corpus (`dead_code` above, for the same reason).
#[allow(unused_imports)]
pub use corpus_folder::corpus;

/// Instruction-carrying SE streams of every architecture in the corpus, small ones first.
pub const SAMPLE_TRACES: &[&str] = &[
    "gfx1100/profile_gemm_run_0/se0.att",
    "gfx1100/profile_sync_run_0_k0/se1.att",
    "gfx1200/profile_gemm_run_0/se0.att",
    "gfx1200/profile_ops_run_0/se1.att",
    "gfx950/profile_gemm_run_0/se0.att",
    "gfx950/aiter_study_aggregate_load_AL_BM32_BN128_BK512_nS2_nW4_att_orig/se0.att",
];

/// The largest trace of the corpus (a 1.7 MB rocprofv3 gfx950 capture).
pub const LARGEST_TRACE: &str = "gfx950/aiter_skinny_M128_att_hack0/se0.att";

pub fn read_corpus(corpus: &std::path::Path, relative: &str) -> Vec<u8> {
    std::fs::read(corpus.join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

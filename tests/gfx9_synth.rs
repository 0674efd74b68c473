//! The gfx9 timing rules of docs/timing/gfx9.md, one instruction class at a time, on streams
//! synthesized here. Every expected stall, duration and time is computed in the test from the
//! rule it names (T1–T12, S1–S6), never taken from a decoder run.
//!
//! The streams come from the gfx9 encoder of `tests/common/encoder`, written from SQTT_FORMAT
//! §1.7; it shares no code with the decoder.

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::records::{Category, Inst, Occupancy, Wave, WaveState};
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

#[path = "common/encoder/mod.rs"]
mod encoder;
use encoder::gfx9::{self, Gfx9};
use rocprof_trace_decoder::testing::Listing;

/// The traced CU of every stream (header DCU) and the kernel entry of the listings.
const CU: u64 = 0;
const ENTRY: u64 = 0x1000;

/// The reference's CYCLE_START_PHASE at the start of a buffer (rule T4).
const INITIAL_PHASE_COUNTER: i64 = 15;

/// The dispatcher of the traced waves, (me 1, pipe 0).
const ME: u64 = 1;

/// A buffer of `version` 4/5/6 (gfx90a/gfx942/gfx950) tracing all SIMDs of [`CU`].
fn stream(version: u64) -> Gfx9 {
    Gfx9::new(gfx9::Header::new(version, CU))
}

/// REG_CS_PRIV: COMPUTE_PGM_LO/HI of (me 1, pipe 0) = `ENTRY`.
fn kernel_entry(s: &mut Gfx9) {
    s.reg_cs_priv(ME, 0, 0x0C, (ENTRY >> 8) & 0xFFFF_FFFF)
        .reg_cs_priv(ME, 0, 0x0D, ENTRY >> 40);
}

/// One decoded WAVE record with copies of its arrays.
struct DecodedWave {
    wave: Wave,
    insts: Vec<Inst>,
    timeline: Vec<(i32, i32)>,
}

fn decode(stream: &Gfx9, listing: Vec<(u64, u64, &'static str)>) -> Vec<DecodedWave> {
    let mut waves = Vec::new();
    let mut sink = |record: Record<'_>| {
        if let Record::Wave(w) = record {
            // SAFETY: the arrays hold the announced counts for the duration of the callback.
            let insts = match w.instructions_size {
                0 => Vec::new(),
                n => {
                    unsafe { std::slice::from_raw_parts(w.instructions_array, n as usize) }.to_vec()
                }
            };
            let timeline: Vec<WaveState> = match w.timeline_size {
                0 => Vec::new(),
                n => unsafe { std::slice::from_raw_parts(w.timeline_array, n as usize) }.to_vec(),
            };
            waves.push(DecodedWave {
                wave: *w,
                insts,
                timeline: timeline.iter().map(|s| (s.kind, s.duration)).collect(),
            });
        }
        0
    };
    let mut isa = Listing(listing, 0);
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), &mut isa);
    session
        .decode_buffer(&stream.bytes)
        .expect("the stream decodes");
    drop(session);
    waves
}

/// The OCCUPANCY records of a stream.
fn occupancy(stream: &Gfx9) -> Vec<Occupancy> {
    let mut rows = Vec::new();
    let mut sink = |record: Record<'_>| {
        if let Record::Occupancy(batch) = record {
            rows.extend_from_slice(batch);
        }
        0
    };
    let mut isa = Listing(Vec::new(), 0);
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), &mut isa);
    session
        .decode_buffer(&stream.bytes)
        .expect("the stream decodes");
    drop(session);
    rows
}

/// `(category, stall, duration, time)` of a record.
fn timing(inst: &Inst) -> (u8, u32, i32, i64) {
    (inst.category(), inst.stall(), inst.duration, inst.time)
}

fn expect(category: Category, stall: i64, duration: i64, time: i64) -> (u8, u32, i32, i64) {
    (category as u8, stall as u32, duration as i32, time)
}

/// Rule T5: the cycles an instruction issued at `issue` and classified at `inst` takes, with the
/// SE counter at `counter` on `simd` and the class offset `offset` (rule T4): the phase is
/// `(counter + simd) mod 4 + offset`, and whole groups of 4 phase steps are taken off the span.
fn cycles(issue: i64, inst: i64, counter: i64, simd: u64, offset: i64) -> i64 {
    let phase = (counter + simd as i64) % 4 + offset;
    4 + (inst - issue - 4 * (phase / 4)).max(0)
}

/// Rule T6: the duration of a record from `time` cut at a later record's issue `at`.
fn trimmed(time: i64, at: i64) -> i64 {
    (at - time).max(4)
}

/// Rule T8: a message classified at `inst` ends then, but not before 4 cycles after its issue.
fn message_end(issue: i64, inst: i64) -> i64 {
    inst.max(issue + 4)
}

/// Rule T9b: a barrier's immediate at `t` starts at the previous end, not before the barrier's
/// issue, and not after `t`.
fn barrier_start(previous_end: i64, issue: i64, t: i64) -> i64 {
    previous_end.max(issue).min(t)
}

/// Class offsets of rule T4.
const SCALAR: i64 = 5;
const VECTOR_ALU: i64 = 2;
const MISC: i64 = 1;
const MEMORY: i64 = 0;

/// Timeline states (SQTT_FORMAT §3.5).
const IDLE: i32 = 1;
const EXEC: i32 = 2;
const WAIT: i32 = 3;
const STALL: i32 = 4;

#[test]
fn every_instruction_class_gets_its_category_and_phase_offset() {
    use Category as C;
    // Rule T3: INST type -> record category and class offset (instruction classes that produce
    // each type in the comments).
    let classes: [(u64, Category, i64); 15] = [
        (0, C::Smem, SCALAR),      // SMEM_RD: s_load_*, s_buffer_load_*
        (16, C::Smem, SCALAR),     // SMEM_WR: s_store_*, s_atomic_*
        (1, C::Salu, SCALAR),      // SALU_32: s_mov_b32, s_add_u32, s_cmp_*
        (17, C::Salu, SCALAR),     // SALU_64: s_mov_b64, s_and_b64
        (7, C::Salu, MEMORY),      // PC: s_setpc/s_swappc/s_call (no class offset)
        (2, C::Vmem, MEMORY),      // VMEM_RD: buffer_load_*, image_load/sample
        (3, C::Vmem, MEMORY),      // VMEM_WR: buffer_store_*, image_store
        (14, C::Flat, MEMORY),     // FLAT_RD: flat/global/scratch loads
        (4, C::Flat, MEMORY),      // FLAT_WR: flat/global/scratch stores
        (6, C::Lds, MISC),         // LDS: ds_*, GDS
        (5, C::Valu, VECTOR_ALU),  // VALU_32: v_add_f32, DPP/SDWA, v_readlane, transcendental
        (18, C::Valu, VECTOR_ALU), // VALU_64: v_fma_f64, v_lshlrev_b64
        (28, C::Valu, VECTOR_ALU), // VALU_MAI: v_mfma_*, v_smfmac_*
        (12, C::Jump, MISC),       // JUMP: a taken s_branch/s_cbranch_*
        (13, C::Next, MISC),       // NEXT: an s_cbranch_* not taken
    ];
    for version in [4, 5, 6] {
        for (inst_type, category, offset) in classes {
            for simd in 0..4 {
                let (issue, inst) = (100, 120);
                let mut s = stream(version);
                s.at(40).wave_start(CU, simd, 3, ME, 0);
                s.at(issue).issue(simd, 3, 2);
                s.at(inst).inst(simd, 3, inst_type);
                s.at(200).wave_end(CU, simd, 3);
                let waves = decode(&s, Vec::new());
                let what = format!("gfx9 version {version}, INST type {inst_type}, simd {simd}");
                assert_eq!(waves.len(), 1, "{what}");
                // T5 with the buffer's first counter value (T4: no earlier record to overlap).
                let dur = cycles(issue, inst, INITIAL_PHASE_COUNTER, simd, offset);
                let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
                assert_eq!(got, [expect(category, 0, dur, issue)], "{what}");
            }
        }
    }
}

#[test]
fn the_phase_counter_is_shared_by_the_buffer_and_advances_on_overlap() {
    let mut s = stream(6);
    s.at(40)
        .wave_start(CU, 0, 0, ME, 0)
        .wave_start(CU, 3, 0, ME, 0);
    // Two VALU instructions of one wave: the second issues before the first has ended.
    s.at(100).issue(0, 0, 2);
    s.at(104).issue(0, 0, 2);
    s.at(120).inst(0, 0, 5);
    s.at(124).inst(0, 0, 5);
    // Then an LDS instruction of a wave on SIMD 3 (where counter 15 and 16 differ in phase).
    s.at(200).issue(3, 0, 2);
    s.at(208).inst(3, 0, 6);
    s.at(300).wave_end(CU, 0, 0).wave_end(CU, 3, 0);
    let waves = decode(&s, Vec::new());
    let counter = INITIAL_PHASE_COUNTER;
    // T4: the first INST sees only its own placeholder and the second one (index len - 2 is
    // itself): no advance.
    let first = cycles(100, 120, counter, 0, VECTOR_ALU);
    // T4: the second was issued at 104, before the first's end (100 + first): +1. T6 trims the
    // first to end at 104.
    assert!(104 < 100 + first);
    let second = cycles(104, 124, counter + 1, 0, VECTOR_ALU);
    let first_trimmed = trimmed(100, 104);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Valu, 0, first_trimmed, 100),
            expect(Category::Valu, 0, second, 104)
        ]
    );
    // The other wave's LDS uses the same, advanced counter.
    let lds = cycles(200, 208, counter + 1, 3, MISC);
    assert_ne!(lds, cycles(200, 208, counter, 3, MISC));
    assert_eq!(
        waves[1].insts.iter().map(timing).collect::<Vec<_>>(),
        [expect(Category::Lds, 0, lds, 200)]
    );
}

#[test]
fn a_stall_moves_the_next_instruction_back_but_not_before_the_previous_end() {
    let mut s = stream(6);
    s.at(40).wave_start(CU, 0, 0, ME, 0);
    s.at(100).issue(0, 0, 2);
    s.at(104).inst(0, 0, 1); // SALU
    s.at(112).issue(0, 0, 1); // stall
    s.at(140).issue(0, 0, 2);
    s.at(152).inst(0, 0, 5); // VALU
    s.at(160).issue(0, 0, 2);
    s.at(164).issue(0, 0, 1); // a stall that starts before the previous instruction ends
    s.at(168).issue(0, 0, 2);
    s.at(200).inst(0, 0, 2); // VMEM, ends at 200
    s.at(204).inst(0, 0, 6); // LDS
    s.at(260).wave_end(CU, 0, 0);
    let waves = decode(&s, Vec::new());
    let c = INITIAL_PHASE_COUNTER;
    let salu = cycles(100, 104, c, 0, SCALAR);
    // T7: issued at 140 after the stall at 112 (later than the SALU's end): moved to 112.
    let valu = cycles(140, 152, c, 0, VECTOR_ALU);
    let valu_start = 112_i64.max(100 + salu);
    let valu_rec = expect(
        Category::Valu,
        140 - valu_start,
        (140 + valu - valu_start).max(4),
        valu_start,
    );
    let vmem = cycles(160, 200, c, 0, MEMORY);
    // T4: the LDS placeholder (issued 168) is not before the VMEM's end (160 + vmem = 200)?
    let lds_counter = c + i64::from(168 < 160 + vmem);
    // T6: the VMEM is trimmed to the LDS issue; T7: the stall at 164 is floored at its end.
    let vmem_dur = trimmed(160, 168);
    let lds = cycles(168, 204, lds_counter, 0, MISC);
    let lds_start = 164_i64.max(160 + vmem_dur);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Salu, 0, salu, 100),
            valu_rec,
            expect(Category::Vmem, 0, vmem_dur, 160),
            expect(
                Category::Lds,
                168 - lds_start,
                (168 + lds - lds_start).max(4),
                lds_start
            ),
        ]
    );
    // T11: IDLE until the first issue, EXEC, STALL from 112 to 140, EXEC to 164, STALL to 168,
    // EXEC until WAVE_END (T12).
    assert_eq!(
        waves[0].timeline,
        [
            (IDLE, 60),
            (EXEC, 12),
            (STALL, 28),
            (EXEC, 24),
            (STALL, 4),
            (EXEC, 92)
        ]
    );
}

#[test]
fn immediates_wait_from_the_previous_end() {
    // s_waitcnt, s_nop, s_sleep, s_setprio, ...: ISSUE status 3, no INST token (T9).
    let mut s = stream(5);
    s.at(40).wave_start(CU, 2, 1, ME, 0);
    s.at(100).issue(2, 1, 2);
    s.at(104).inst(2, 1, 1); // SALU
    s.at(200).issue(2, 1, 3); // e.g. s_sleep
    s.at(220).issue(2, 1, 2);
    s.at(240).inst(2, 1, 3); // VMEM store, classified at 240
    s.issue(2, 1, 3); // an s_waitcnt at 240, before the store's end: the store is trimmed
    s.at(300).issue(2, 1, 2);
    s.issue(2, 1, 3); // an immediate right after an unclassified placeholder
    s.at(308).inst(2, 1, 17);
    s.at(400).wave_end(CU, 2, 1);
    let waves = decode(&s, Vec::new());
    let c = INITIAL_PHASE_COUNTER;
    let salu = cycles(100, 104, c, 2, SCALAR);
    let sleep_start = (100 + salu).min(200);
    let sleep = 4 + (200 - sleep_start);
    let store = cycles(220, 240, c, 2, MEMORY);
    assert!(220 + store > 240, "the store overlaps the immediate");
    let store_trimmed = trimmed(220, 240);
    let wait_start = (220 + store_trimmed).min(240);
    let wait = 4 + (240 - wait_start);
    // The placeholder issued at 300 counts as not finished: the immediate starts at its token.
    // T4: at the SALU_64's INST the record second from the end is its own placeholder.
    let salu64 = cycles(300, 308, c, 2, SCALAR);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Salu, 0, salu, 100),
            expect(Category::Immed, sleep, sleep, sleep_start),
            expect(Category::Vmem, 0, store_trimmed, 220),
            expect(Category::Immed, wait, wait, wait_start),
            expect(Category::Salu, 0, salu64, 300),
            expect(Category::Immed, 4, 4, 300),
        ]
    );
    // T11: each immediate is a WAIT entry of its own from its start; EXEC after it.
    // EXEC from the sleep's end through the issue at 220 (no state change, T11) to 240.
    let exec_after_sleep = wait_start - (sleep_start + sleep);
    assert_eq!(
        &waves[0].timeline[..4],
        [
            (IDLE, 60),
            (EXEC, (sleep_start - 100) as i32),
            (WAIT, sleep as i32),
            (EXEC, exec_after_sleep as i32)
        ]
    );
}

#[test]
fn messages_start_at_the_previous_end_and_take_their_stalls() {
    // s_sendmsg then s_endpgm: OTHER_MSG (type 15), rule T8. The s_sendmsg, followed by a new
    // instruction instead of an immediate, is taken back; the stall before its issue stays its own.
    let mut s = stream(6);
    s.at(40).wave_start(CU, 0, 0, ME, 0);
    s.at(100).issue(0, 0, 2);
    s.at(120).inst(0, 0, 2); // VMEM
    s.at(200).issue(0, 0, 1); // stall before the message's issue
    s.at(300).issue(0, 0, 2);
    s.at(300).inst(0, 0, 15); // s_sendmsg
    s.at(320).issue(0, 0, 2);
    s.at(324).inst(0, 0, 1); // SALU: the stall at 200 was the message's
    s.at(500).issue(0, 0, 2);
    s.inst(0, 0, 15); // s_endpgm at 500
    s.wave_end(CU, 0, 0);
    let waves = decode(&s, Vec::new());
    let c = INITIAL_PHASE_COUNTER;
    let vmem = cycles(100, 120, c, 0, MEMORY);
    let salu = cycles(320, 324, c, 0, SCALAR);
    let endpgm_start = (320 + salu).min(500);
    let endpgm_end = message_end(500, 500);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Vmem, 0, vmem, 100),
            expect(Category::Salu, 0, salu, 320),
            expect(
                Category::Message,
                0,
                endpgm_end - endpgm_start,
                endpgm_start
            ),
        ]
    );
    // T8/T12: the wave ends at its WAVE_END; its timeline ends with the message's WAIT span.
    assert_eq!(waves[0].wave.end_time, 500);
    assert_eq!(
        waves[0].timeline.last(),
        Some(&(WAIT, (endpgm_end - endpgm_start) as i32))
    );
}

#[test]
fn the_wave_is_idle_after_its_endpgm() {
    // Rule T8a: the state after a message's span is IDLE; the wave end credits it (T12).
    let mut s = stream(6);
    s.at(40).wave_start(CU, 2, 1, ME, 0);
    s.at(100).issue(2, 1, 2);
    s.at(104).inst(2, 1, 1); // SALU
    s.at(400).issue(2, 1, 2);
    s.at(404).inst(2, 1, 15); // s_endpgm
    s.at(420).wave_end(CU, 2, 1);
    let waves = decode(&s, Vec::new());
    let salu = cycles(100, 104, INITIAL_PHASE_COUNTER, 2, SCALAR);
    let start = 100 + salu;
    let end = message_end(400, 404);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Salu, 0, salu, 100),
            expect(Category::Message, 0, end - start, start),
        ]
    );
    assert_eq!(
        waves[0].timeline,
        [
            (IDLE, 100 - 40),
            (EXEC, (start - 100) as i32),
            (WAIT, (end - start) as i32),
            (IDLE, (420 - end) as i32),
        ]
    );
}

#[test]
fn a_stall_before_the_endpgm_moves_it_and_its_span_is_a_stall() {
    // Rule T8a: a stall start before the message's issue moves the message to it (not before
    // the previous end), its stall is the wait for the issue, and its span is a STALL entry of
    // its own; the state clock, past the message's start, is cut back to it.
    let mut s = stream(5);
    s.at(40).wave_start(CU, 3, 0, ME, 0);
    s.at(100).issue(3, 0, 2);
    s.at(104).inst(3, 0, 12); // JUMP
    s.at(200).issue(3, 0, 1); // stall
    s.at(204).issue(3, 0, 2);
    s.at(208).inst(3, 0, 15); // s_endpgm
    s.wave_end(CU, 3, 0);
    let waves = decode(&s, Vec::new());
    let jump = cycles(100, 104, INITIAL_PHASE_COUNTER, 3, MISC);
    let start = 200.max(100 + jump);
    let end = message_end(204, 208);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Jump, 0, jump, 100),
            expect(Category::Message, 204 - start, end - start, start),
        ]
    );
    assert_eq!(
        waves[0].timeline,
        [
            (IDLE, 100 - 40),
            (EXEC, 200 - 100),
            // The STALL from 200 to the ISSUE at 204, cut back to the message's start.
            (STALL, (start - 200) as i32),
            (STALL, (end - start) as i32),
        ]
    );
}

#[test]
fn an_endpgm_issued_with_the_wave_end_leaves_no_record() {
    // Rule T12a (an empty kernel): the message starts at the wave's end and is taken back with
    // its span; the instruction array is still handed (non-null, size 0).
    let mut s = stream(6);
    s.at(40).wave_start(CU, 1, 2, ME, 0);
    s.at(700).issue(1, 2, 2);
    s.inst(1, 2, 15);
    s.wave_end(CU, 1, 2);
    let waves = decode(&s, Vec::new());
    assert!(waves[0].insts.is_empty());
    assert_eq!(waves[0].wave.instructions_size, 0);
    assert!(!waves[0].wave.instructions_array.is_null());
    assert_eq!(waves[0].timeline, [(IDLE, 700 - 40)]);
    assert_eq!(waves[0].wave.end_time, 700);
}

#[test]
fn a_barrier_message_and_its_immediate_are_one_immed() {
    // s_barrier: OTHER_MSG, then ISSUE status 3 when the wave leaves it (rule T9b).
    let mut s = stream(4);
    s.at(40).wave_start(CU, 1, 0, ME, 0);
    s.at(100).issue(1, 0, 2);
    s.at(104).inst(1, 0, 1);
    s.at(200).issue(1, 0, 2);
    s.at(204).inst(1, 0, 15);
    s.at(240).issue(1, 0, 3);
    s.at(300).wave_end(CU, 1, 0);
    let waves = decode(&s, Vec::new());
    let salu = cycles(100, 104, INITIAL_PHASE_COUNTER, 1, SCALAR);
    let start = barrier_start(100 + salu, 200, 240);
    let wait = 4 + (240 - start);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Salu, 0, salu, 100),
            expect(Category::Immed, wait, wait, start)
        ]
    );
}

#[test]
fn exports_and_unknown_types_remove_their_placeholder() {
    // EXPREQ_GDS/GFX, EXPGNT_PAR_COL/POS_GDS, FATAL_HALT, reserved: rule T10.
    for inst_type in [8, 9, 10, 11, 25, 26, 27, 30, 31] {
        let mut s = stream(6);
        s.at(40).wave_start(CU, 0, 0, ME, 0);
        s.at(100).issue(0, 0, 2);
        s.at(104).issue(0, 0, 2);
        s.at(108).inst(0, 0, 1);
        s.at(112).inst(0, 0, inst_type);
        s.at(200).wave_end(CU, 0, 0);
        let waves = decode(&s, Vec::new());
        let c = INITIAL_PHASE_COUNTER;
        let salu = cycles(100, 108, c, 0, SCALAR);
        // The trim at the dropped INST (T6) still applies.
        let salu = if 104 < 100 + salu { 4 } else { salu };
        let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
        assert_eq!(
            got,
            [expect(Category::Salu, 0, salu, 100)],
            "INST type {inst_type}"
        );
    }
}

#[test]
fn xnack_replays_extend_their_original() {
    use Category as C;
    // Rule T10: *_REPLAY type -> original type, its category and class offset.
    let replays = [
        (19, 0, C::Smem, SCALAR),
        (20, 16, C::Smem, SCALAR),
        (21, 2, C::Vmem, MEMORY),
        (22, 3, C::Vmem, MEMORY),
        (23, 4, C::Flat, MEMORY),
        (24, 14, C::Flat, MEMORY),
    ];
    let c = INITIAL_PHASE_COUNTER;
    for (replay, original, category, offset) in replays {
        let first = cycles(100, 120, c, 0, offset);
        // The original, an SALU, then the replay: the original is extended to the replay's
        // token + 4, the growth added to its stall; the replay's placeholder goes.
        let mut s = stream(6);
        s.at(40).wave_start(CU, 0, 0, ME, 0);
        s.at(100).issue(0, 0, 2);
        s.at(120).inst(0, 0, original);
        s.at(140).issue(0, 0, 2);
        s.at(144).inst(0, 0, 1);
        s.at(200).issue(0, 0, 2);
        s.at(240).inst(0, 0, replay);
        s.at(300).wave_end(CU, 0, 0);
        let waves = decode(&s, Vec::new());
        let extended = first.max(240 + 4 - 100);
        let salu = cycles(140, 144, c, 0, SCALAR);
        let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
        assert_eq!(
            got,
            [
                expect(category, extended - first, extended, 100),
                expect(C::Salu, 0, salu, 140)
            ],
            "replay type {replay}"
        );
        // A replay right after its original (one index apart) leaves it as it is.
        let mut s = stream(6);
        s.at(40).wave_start(CU, 0, 0, ME, 0);
        s.at(100).issue(0, 0, 2);
        s.at(120).inst(0, 0, original);
        s.at(200).issue(0, 0, 2);
        s.at(240).inst(0, 0, replay);
        s.at(300).wave_end(CU, 0, 0);
        let waves = decode(&s, Vec::new());
        let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
        assert_eq!(
            got,
            [expect(category, 0, first, 100)],
            "adjacent replay type {replay}"
        );
    }
}

#[test]
fn branches_and_pc_jumps_follow_the_code() {
    // s_cbranch taken (JUMP) then not taken (NEXT), s_setpc (PC + INST_PC), s_endpgm: T3, S2, S3.
    let listing = vec![
        (ENTRY, 4, "s_add_u32 s0, s0, 1"),
        (ENTRY + 4, 4, "s_cbranch_scc0 65534"),
        (ENTRY + 8, 4, "s_setpc_b64 s[2:3]"),
        (
            0x2000,
            8,
            "v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]",
        ),
        (0x2008, 4, "s_endpgm"),
    ];
    let mut s = stream(6);
    kernel_entry(&mut s);
    s.at(40).wave_start(CU, 0, 0, ME, 0);
    let mut t = 100;
    for inst_type in [1, 12, 1, 13, 7] {
        s.at(t).issue(0, 0, 2);
        s.at(t + 4).inst(0, 0, inst_type);
        t += 12;
    }
    s.inst_pc(0, 0, 0x2000);
    s.at(200).issue(0, 0, 2);
    s.at(220).inst(0, 0, 28);
    s.at(300).issue(0, 0, 2);
    s.inst(0, 0, 15).wave_end(CU, 0, 0);
    let waves = decode(&s, listing);
    let c = INITIAL_PHASE_COUNTER;
    let mut expected = Vec::new();
    let mut t = 100;
    for (category, offset) in [
        (Category::Salu, SCALAR),
        (Category::Jump, MISC),
        (Category::Salu, SCALAR),
        (Category::Next, MISC),
        (Category::Salu, MEMORY),
    ] {
        expected.push(expect(category, 0, cycles(t, t + 4, c, 0, offset), t));
        t += 12;
    }
    let mfma = cycles(200, 220, c, 0, VECTOR_ALU);
    expected.push(expect(Category::Valu, 0, mfma, 200));
    expected.push(expect(Category::Message, 0, 304 - 220, 220));
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(got, expected);
    let pcs: Vec<_> = waves[0].insts.iter().map(|i| i.pc.address).collect();
    assert_eq!(
        pcs,
        [
            ENTRY,
            ENTRY + 4,
            ENTRY,
            ENTRY + 4,
            ENTRY + 8,
            0x2000,
            0x2008
        ]
    );
}

#[test]
fn a_trap_hides_its_handler_until_the_pc_returns() {
    // GO_TO_TRAP (type 29): a CONTEXT record; the handler's tokens are not recorded (T10).
    let listing = vec![(ENTRY, 4, "s_trap 2"), (0x3000, 4, "v_add_f32 v0, v1, v2")];
    let mut s = stream(6);
    kernel_entry(&mut s);
    s.at(40).wave_start(CU, 3, 9, ME, 0);
    s.at(100).issue(3, 9, 2);
    s.at(108).inst(3, 9, 29);
    s.at(120).issue(3, 9, 2);
    s.at(124).inst(3, 9, 1); // in the handler
    s.at(140).inst(3, 9, 7); // the return: the wave resumes at the INST_PC
    s.inst_pc(3, 9, 0x3000);
    s.at(160).issue(3, 9, 2);
    s.at(164).inst(3, 9, 5);
    s.at(200).wave_end(CU, 3, 9);
    let waves = decode(&s, listing);
    let c = INITIAL_PHASE_COUNTER;
    let trap = cycles(100, 108, c, 3, MEMORY);
    assert!(140 + 4 - 100 > trap);
    let valu = cycles(160, 164, c, 3, VECTOR_ALU);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Context, 0, 140 + 4 - 100, 100),
            expect(Category::Valu, 0, valu, 160)
        ]
    );
    assert_eq!(waves[0].insts[1].pc.address, 0x3000);
}

#[test]
fn a_context_save_is_one_context_record_until_the_pc_returns() {
    // MISC SAVE_CONTEXT, then WAVE_START with count > 64 twice (save, restore), rule T10.
    let mut s = stream(5);
    s.at(40).wave_start(CU, 0, 4, ME, 0);
    s.at(100).issue(0, 4, 2);
    s.at(104).inst(0, 4, 1);
    s.at(120).save_context();
    s.at(124).wave_start(CU, 0, 4, ME, 100);
    s.at(130 + 2).issue(0, 4, 2); // ignored while saved
    s.at(160).wave_start(CU, 0, 4, ME, 100);
    s.at(200).inst(0, 4, 7);
    s.inst_pc(0, 4, 0x4000);
    s.at(220).issue(0, 4, 2);
    s.at(224).inst(0, 4, 5);
    s.at(300).wave_end(CU, 0, 4);
    let waves = decode(&s, Vec::new());
    let c = INITIAL_PHASE_COUNTER;
    let salu = cycles(100, 104, c, 0, SCALAR);
    let valu = cycles(220, 224, c, 0, VECTOR_ALU);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Salu, 0, salu, 100),
            expect(Category::Context, 0, 200 + 4 - 124, 124),
            expect(Category::Valu, 0, valu, 220),
        ]
    );
    assert_eq!(waves[0].wave.contexts, 1);
    assert_eq!(waves[0].wave.end_time, 300);
}

#[test]
fn mfma_scale_moves_four_cycles_earlier_when_the_previous_record_has_ended() {
    // v_mfma_scale_*: rule S5, applied while stitching.
    let listing = vec![
        (ENTRY, 4, "s_mov_b32 s0, 0"),
        (
            ENTRY + 4,
            8,
            "v_mfma_scale_f32_16x16x128_f8f6f4 a[0:3], v[0:7], v[8:15], a[0:3], v16, v17",
        ),
        (ENTRY + 12, 4, "s_mov_b32 s1, 0"),
        (ENTRY + 16, 4, "s_endpgm"),
    ];
    let mut s = stream(6);
    kernel_entry(&mut s);
    s.at(40).wave_start(CU, 0, 0, ME, 0);
    s.at(96).issue(0, 0, 2);
    s.at(100).inst(0, 0, 1);
    s.at(104).issue(0, 0, 2);
    s.at(124).inst(0, 0, 28);
    s.at(140).issue(0, 0, 2);
    s.at(144).inst(0, 0, 1);
    s.at(200).issue(0, 0, 2);
    s.inst(0, 0, 15).wave_end(CU, 0, 0);
    let waves = decode(&s, listing);
    let c = INITIAL_PHASE_COUNTER;
    let first = cycles(96, 100, c, 0, SCALAR);
    let mfma = cycles(104, 124, c, 0, VECTOR_ALU);
    let third = cycles(140, 144, c, 0, SCALAR);
    // S5: 4 cycles earlier (the SALU ended at 96 + first, before 104), and 4 more cycles since
    // the next record starts later than its end.
    assert!(96 + first < 104 && 104 + mfma < 140);
    let got: Vec<_> = waves[0].insts.iter().map(timing).collect();
    assert_eq!(
        got,
        [
            expect(Category::Salu, 0, first, 96),
            expect(Category::Valu, 0, mfma + 8, 100),
            expect(Category::Salu, 0, third, 140),
            expect(Category::Message, 0, 204 - (140 + third), 140 + third),
        ]
    );
}

#[test]
fn a_wave_without_a_known_entry_ignores_inst_pc_until_it_has_a_slot() {
    // Rule S1: no PGM registers, so no entry PC; the INST_PC of a PC-type INST is kept.
    let listing = vec![(0x5000, 4, "v_mov_b32 v0, 0")];
    let mut s = stream(6);
    s.at(40).wave_start(CU, 0, 0, ME, 0);
    s.at(100).issue(0, 0, 2);
    s.at(104).inst(0, 0, 1);
    s.inst_pc(0, 0, 0x5000); // no slot yet: ignored
    s.at(120).issue(0, 0, 2);
    s.at(124).inst(0, 0, 7);
    s.inst_pc(0, 0, 0x5000);
    s.at(140).issue(0, 0, 2);
    s.at(144).inst(0, 0, 5);
    s.at(200).wave_end(CU, 0, 0);
    let waves = decode(&s, listing);
    let pcs: Vec<_> = waves[0].insts.iter().map(|i| i.pc.address).collect();
    // The walk has no line for record 0 and stops there (as the reference's does).
    assert_eq!(pcs, [0, 0, 0]);
    let timeline_total: i64 = waves[0].timeline.iter().map(|s| i64::from(s.1)).sum();
    assert_eq!(
        timeline_total,
        200 - 40,
        "T12: the timeline closes at WAVE_END"
    );
}

#[test]
fn a_traced_slot_without_a_wave_ignores_its_wave_end() {
    // Rule T2: the traced CU's WAVE_END for an empty slot is dropped whole; another CU's gets a
    // start/end pair at time 0.
    let mut s = stream(6);
    s.at(40).wave_end(CU, 1, 2);
    s.at(80).wave_end(CU + 1, 1, 2);
    let rows: Vec<_> = occupancy(&s)
        .iter()
        .map(|o| (o.cu, o.simd, o.wave_id, o.is_start(), o.time))
        .collect();
    let other = (CU + 1) as u8;
    assert_eq!(rows, [(other, 1, 2, true, 0), (other, 1, 2, false, 0)]);
}

#[test]
fn every_instruction_class_is_stitched_to_its_line() {
    // One line of each class, the INST type (or ISSUE status 3) the hardware reports for it, and
    // the record it must give (T3, T8, T9, T9b) at that line's PC (S2, S4).
    use Category as C;
    enum Step {
        Inst(u64),
        Immediate,
        Barrier,
    }
    use Step::*;
    let code: [(u64, &str, Step, Category); 26] = [
        (8, "s_load_dwordx2 s[0:1], s[4:5], 0x0", Inst(0), C::Smem),
        (8, "s_store_dword s0, s[2:3], 0x0", Inst(16), C::Smem),
        (4, "s_mov_b32 s0, 0", Inst(1), C::Salu),
        (4, "s_mov_b64 s[0:1], 0", Inst(17), C::Salu),
        (8, "buffer_load_dword v1, off, s[0:3], 0", Inst(2), C::Vmem),
        (8, "buffer_store_dword v1, off, s[0:3], 0", Inst(3), C::Vmem),
        (
            8,
            "image_load v[0:3], v[4:5], s[8:15] dmask:0xf",
            Inst(2),
            C::Vmem,
        ),
        (8, "global_load_dword v1, v[2:3], off", Inst(14), C::Flat),
        (8, "scratch_store_dword off, v1, s0", Inst(4), C::Flat),
        (8, "flat_load_dword v1, v[2:3]", Inst(14), C::Flat),
        (8, "ds_read_b32 v1, v2", Inst(6), C::Lds),
        (8, "ds_add_u32 v1, v2 gds", Inst(6), C::Lds),
        (
            8,
            "v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
            Inst(5),
            C::Valu,
        ),
        (
            8,
            "v_add_f32_sdwa v0, v1, v2 dst_sel:WORD_1 src0_sel:WORD_0",
            Inst(5),
            C::Valu,
        ),
        (
            8,
            "v_fma_f64 v[0:1], v[2:3], v[4:5], v[6:7]",
            Inst(18),
            C::Valu,
        ),
        (4, "v_exp_f32_e32 v0, v1", Inst(5), C::Valu),
        (8, "v_readlane_b32 s0, v1, 0", Inst(5), C::Valu),
        (8, "v_pk_fma_f16 v0, v1, v2, v3", Inst(5), C::Valu),
        (
            8,
            "v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]",
            Inst(28),
            C::Valu,
        ),
        (
            8,
            "v_smfmac_f32_16x16x32_f16 v[0:3], v[4:5], v[6:9], v10",
            Inst(28),
            C::Valu,
        ),
        (4, "s_waitcnt vmcnt(0)", Immediate, C::Immed),
        (4, "s_nop 0", Immediate, C::Immed),
        (4, "s_sleep 1", Immediate, C::Immed),
        // Reported as OTHER_MSG and followed by the next instruction, an s_sendmsg would leave
        // no record (T8); as an immediate it is an IMMED line's.
        (4, "s_sendmsg sendmsg(MSG_INTERRUPT)", Immediate, C::Immed),
        (4, "s_barrier", Barrier, C::Immed),
        (4, "s_endpgm", Inst(15), C::Message),
    ];
    let mut listing = Vec::new();
    let mut pc = ENTRY;
    for (size, text, _, _) in &code {
        listing.push((pc, *size, *text));
        pc += size;
    }
    let mut s = stream(6);
    kernel_entry(&mut s);
    s.at(40).wave_start(CU, 2, 5, ME, 0);
    let mut t = 100;
    for (_, _, step, _) in &code {
        match step {
            Inst(inst_type) => {
                s.at(t).issue(2, 5, 2);
                s.at(t + 4).inst(2, 5, *inst_type);
            }
            Immediate => {
                s.at(t).issue(2, 5, 3);
            }
            Barrier => {
                s.at(t).issue(2, 5, 2);
                s.at(t + 4).inst(2, 5, 15);
                s.at(t + 8).issue(2, 5, 3);
            }
        }
        t += 12;
    }
    s.at(t).wave_end(CU, 2, 5);
    let waves = decode(&s, listing.clone());
    let got: Vec<_> = waves[0]
        .insts
        .iter()
        .map(|i| (i.category(), i.pc.address))
        .collect();
    let expected: Vec<_> = code
        .iter()
        .zip(&listing)
        .map(|((_, _, _, category), (pc, _, _))| (*category as u8, *pc))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn data_lost_is_reported_once_at_the_end_of_its_buffer() {
    // Rule (gfx9.md "Packet loss", rdna.md §4.10): however many MISC PACKET_LOST tokens a buffer
    // holds, one INFO DATA_LOST goes out, after the buffer's waves and batches.
    let mut s = stream(6);
    s.at(40).wave_start(CU, 1, 2, ME, 0);
    s.at(60).packet_lost();
    s.at(80).packet_lost();
    s.at(700).wave_end(CU, 1, 2);
    let mut order = Vec::new();
    let mut sink = |record: Record<'_>| {
        order.push(match record {
            Record::Info(_) => "info",
            Record::Wave(_) => "wave",
            Record::Event(_) => "event",
            _ => "other",
        });
        0
    };
    let mut isa = Listing(Vec::new(), 0);
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), &mut isa);
    session.decode_buffer(&s.bytes).expect("the stream decodes");
    drop(session);
    let infos: Vec<usize> = (0..order.len()).filter(|&k| order[k] == "info").collect();
    assert_eq!(infos.len(), 1, "{order:?}");
    assert!(order[..infos[0]].contains(&"wave"), "{order:?}");
    // Only the packet-loss events (0.3.0 records) may follow it.
    assert!(
        order[infos[0] + 1..].iter().all(|k| *k == "event"),
        "{order:?}"
    );
}

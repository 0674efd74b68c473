//! RDNA instruction timing per instruction class, on streams synthesized here. Every expected
//! category, stall, duration, time and timeline below is computed from the rules of
//! docs/timing/rdna.md as written out in this file, never by running the decoder.

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::isa::{IsaProvider, NoIsa};
use rocprof_trace_decoder::records::InstOtherSimd;
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

#[path = "common/encoder/mod.rs"]
mod encoder;
use encoder::rdna::{Header, Rdna, Unit, MISC_SAVE_CONTEXT};
use rocprof_trace_decoder::testing::Listing;

const SMEM: u8 = 1;
const SALU: u8 = 2;
const VMEM: u8 = 3;
const FLAT: u8 = 4;
const LDS: u8 = 5;
const VALU: u8 = 6;
const JUMP: u8 = 7;
const NEXT: u8 = 8;
const IMMED: u8 = 9;
const CONTEXT: u8 = 10;
const MESSAGE: u8 = 11;
const BVH: u8 = 12;

const IDLE: i32 = 1;
const EXEC: i32 = 2;
const WAIT: i32 = 3;
const STALL: i32 = 4;

/// The header's DPRate field used below (rate `1 << (6 - 1)` = 32) and dp_derate (`1 << 2`).
const DPRATE_FIELD: u64 = 6;
const DPRATE: i32 = 32;
const DERATE_FIELD: u64 = 2;
const DERATE: i32 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gen {
    Gfx10,
    Gfx11,
    Gfx12,
}

const GENS: [Gen; 3] = [Gen::Gfx10, Gen::Gfx11, Gen::Gfx12];

impl Gen {
    fn version(self) -> u64 {
        match self {
            Gen::Gfx10 => 2,
            Gen::Gfx11 => 3,
            Gen::Gfx12 => 4,
        }
    }

    fn ids(self) -> u32 {
        if self == Gen::Gfx12 {
            256
        } else {
            128
        }
    }

    /// gfx10/11 stamp WAVE_READY one cycle before its token time.
    fn ready_shift(self) -> i64 {
        if self == Gen::Gfx12 {
            0
        } else {
            1
        }
    }
}

/// What the rule book says an INST id does (docs/timing/rdna.md, "INST ids").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// A record of this category and cycle count.
    Record(u8, i32),
    /// s_setpc / s_swappc / s_call: a SALU record of 1 cycle, the next PC comes by NEW_PC.
    Jump,
    /// Timed as an immediate (the barrier).
    Immediate,
    Trap,
    ReturnFromTrap,
    /// An INST_OTHER_SIMD record of this category and cycle count.
    OtherSimd(u8, i32),
    Nothing,
}

/// The rule book's INST id table, written out as ranges.
fn rule(gen: Gen, id: u32) -> Rule {
    use Rule::*;
    let gfx10 = gen == Gen::Gfx10;
    let gfx12 = gen == Gen::Gfx12;
    let n = id as i32;
    match id {
        0 | 7 => Record(SALU, 1),
        1 | 2 => Record(SMEM, 1),
        3 => Record(JUMP, 1),
        4 => Record(NEXT, 1),
        5 => Jump,
        6 => Trap,
        8 => Record(CONTEXT, 1),
        9 => Record(MESSAGE, 1),
        10 if gen == Gen::Gfx11 => Record(VALU, DPRATE),
        10 => Record(VALU, 1),
        11 => Record(VALU, 4),
        12..=14 => Record(
            VALU,
            [1, 2, 4][id as usize - 12] * if gfx10 { DPRATE } else { 1 },
        ),
        15 => Record(
            VALU,
            match gen {
                Gen::Gfx10 => 16 * DPRATE,
                Gen::Gfx11 | Gen::Gfx12 => 16,
            },
        ),
        16 | 17 if gfx10 => Record(VALU, DPRATE),
        16 | 17 if !gfx12 => Record(VALU, 1),
        18 => Record(VALU, 1),
        19 => Immediate,
        30 if gfx10 => Record(FLAT, 1),
        31..=34 if gfx10 => Record(FLAT, n - 29),
        35 if gfx10 => Record(VMEM, 1),
        36..=40 if gfx10 => Record(VMEM, n - 35),
        28 if !gfx10 => Record(FLAT, 2),
        29..=32 if !gfx10 => Record(FLAT, n - 26),
        33 | 34 if !gfx10 => Record(VMEM, n - 32),
        35..=40 if !gfx10 => Record(VMEM, n - 34),
        41 => Record(LDS, 1),
        42..=46 => Record(LDS, n - 41),
        47 | 48 => Record(VMEM, n - 46),
        49..=54 => Record(VMEM, n - 48),
        55..=66 => Record(VMEM, n - 54),
        68..=71 => Record(VMEM, n - 67),
        72..=78 => Record(VMEM, n - 70),
        80..=84 if !gfx10 => OtherSimd(LDS, n - 79),
        85..=89 if !gfx10 => OtherSimd(FLAT, n - 83),
        90..=101 if gen == Gen::Gfx11 => OtherSimd(VMEM, n - 89),
        103 => Record(BVH, 8),
        104 => Record(BVH, 9),
        105 => Record(BVH, 11),
        106 => Record(BVH, 12),
        110 | 111 => Record(LDS, 1),
        112 | 113 if !gfx12 => Record(SALU, 1),
        114 if !gfx10 => Record(SALU, 1),
        115 if !gfx10 => Record(VALU, 1),
        116 if !gfx10 => Record(VALU, 2),
        117 => ReturnFromTrap,
        118 if gen == Gen::Gfx11 => Record(LDS, 6),
        118 if gfx12 => Record(BVH, 6),
        119 if !gfx10 => OtherSimd(LDS, 6),
        120 if gfx12 => OtherSimd(LDS, 10),
        121 if gfx12 => Record(BVH, 10),
        122 | 138 if gfx12 => Record(MESSAGE, 1),
        135..=137 if gfx12 => Record(SALU, 1),
        140..=143 if gfx12 => Record(VALU, 8 << (id - 140)),
        146 if gfx12 => Record(VALU, DPRATE),
        147 if gfx12 => Record(VALU, DPRATE * DERATE),
        150 | 151 if gfx12 => Record(SMEM, 1),
        152 if gfx12 => Record(SALU, 3),
        153 if gfx12 => Record(VALU, 1),
        155 if gfx12 => Record(SALU, 2),
        156 if gfx12 => Record(SALU, 5),
        188..=221 if gfx12 => OtherSimd(VMEM, n - 187),
        222..=255 if gfx12 => Record(VMEM, n - 221),
        _ => Nothing,
    }
}

/// A stream of one generation: HEADER tracing SIMD 0 of WGP 0, SA 0 with [`DPRATE_FIELD`] and
/// [`DERATE_FIELD`]; every token below carries delta 0 and the clock is moved with
/// [`Rdna::at`].
fn stream(gen: Gen) -> Rdna {
    Rdna::new(header(gen))
}

fn header(gen: Gen) -> Header {
    Header {
        dprate: DPRATE_FIELD,
        dp_derate: DERATE_FIELD,
        ..Header::version(gen.version())
    }
}

/// One decoded wave: `(category, stall, duration, time)` per record and `(state, cycles)` per
/// timeline entry.
#[derive(Debug, Default, PartialEq, Eq)]
struct WaveOut {
    insts: Vec<(u8, u32, i32, i64)>,
    pcs: Vec<u64>,
    timeline: Vec<(i32, i32)>,
    begin: i64,
    end: i64,
}

fn decode(trace: &Rdna) -> (Vec<WaveOut>, Vec<InstOtherSimd>) {
    decode_with(trace, &mut NoIsa)
}

fn decode_with(trace: &Rdna, isa: &mut dyn IsaProvider) -> (Vec<WaveOut>, Vec<InstOtherSimd>) {
    let mut waves = Vec::new();
    let mut other = Vec::new();
    let mut sink = |record: Record<'_>| {
        match record {
            Record::Wave(w) => {
                // SAFETY: the arrays hold their counts while the record is delivered.
                let (insts, timeline) = unsafe {
                    (
                        if w.instructions_size == 0 {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(
                                w.instructions_array,
                                w.instructions_size as usize,
                            )
                        },
                        if w.timeline_size == 0 {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(w.timeline_array, w.timeline_size as usize)
                        },
                    )
                };
                waves.push(WaveOut {
                    insts: insts
                        .iter()
                        .map(|i| (i.category(), i.stall(), i.duration, i.time))
                        .collect(),
                    pcs: insts.iter().map(|i| i.pc.address).collect(),
                    timeline: timeline.iter().map(|s| (s.kind, s.duration)).collect(),
                    begin: w.begin_time,
                    end: w.end_time,
                });
            }
            Record::InstOtherSimd(batch) => other.extend_from_slice(batch),
            _ => {}
        }
        0
    };
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), isa);
    session.decode_buffer(&trace.padded()).expect("decodes");
    drop(session);
    (waves, other)
}

/// `records` followed by the token-less s_endpgm: a MESSAGE record from the last record's end to
/// the WAVE_END at `end`, when there is time left.
fn with_endpgm(mut records: Vec<(u8, u32, i32, i64)>, end: i64) -> Vec<(u8, u32, i32, i64)> {
    let last_end = records.last().map(|r| r.3 + i64::from(r.2));
    if let Some(last_end) = last_end.filter(|&e| e < end) {
        records.push((MESSAGE, 0, (end - last_end) as i32, last_end));
    }
    records
}

fn one_wave(trace: &Rdna) -> WaveOut {
    let (mut waves, _) = decode(trace);
    assert_eq!(waves.len(), 1, "{waves:?}");
    waves.remove(0)
}

/// Every INST id of every generation, alone in a wave: WAVE_START at 10, the INST at 20,
/// WAVE_END at 200.
#[test]
fn every_inst_id_gets_the_rule_books_category_and_cycles() {
    for gen in GENS {
        for id in 0..gen.ids() {
            let mut trace = stream(gen);
            trace
                .at(10)
                .wave_start(Unit::wave(0))
                .at(20)
                .inst(0, u64::from(id))
                .at(200)
                .wave_end(Unit::wave(0));
            let (waves, other) = decode(&trace);
            let context = format!("{gen:?} id {id}: {:?}", rule(gen, id));
            assert_eq!(waves.len(), 1, "{context}");
            let wave = &waves[0];
            assert_eq!((wave.begin, wave.end), (10, 200), "{context}");
            let (insts, timeline, others) = match rule(gen, id) {
                // The record, then the token-less s_endpgm from its end to the wave's end.
                Rule::Record(category, cycles) => (
                    with_endpgm(vec![(category, 0, cycles, 20)], 200),
                    vec![(IDLE, 10), (EXEC, 180)],
                    vec![],
                ),
                Rule::Jump => (
                    vec![(SALU, 0, 1, 20), (MESSAGE, 0, 179, 21)],
                    vec![(IDLE, 10), (EXEC, 180)],
                    vec![],
                ),
                // WAIT for the immediate's one cycle.
                Rule::Immediate => (
                    vec![(IMMED, 0, 1, 20), (MESSAGE, 0, 179, 21)],
                    vec![(IDLE, 10), (WAIT, 1), (EXEC, 179)],
                    vec![],
                ),
                // The wave ends trapped: the s_endpgm record all the same (rdna.md §4.4).
                Rule::Trap => (
                    vec![(CONTEXT, 0, 1, 20), (MESSAGE, 0, 179, 21)],
                    vec![(IDLE, 190)],
                    vec![],
                ),
                Rule::ReturnFromTrap | Rule::Nothing => (vec![], vec![(IDLE, 190)], vec![]),
                Rule::OtherSimd(category, cycles) => (
                    vec![],
                    vec![(IDLE, 190)],
                    vec![(20, cycles as u16, category)],
                ),
            };
            assert_eq!(wave.insts, insts, "{context}");
            assert_eq!(wave.timeline, timeline, "{context}");
            let got: Vec<_> = other
                .iter()
                .map(|o| (o.time, o.cycles, o.category))
                .collect();
            assert_eq!(got, others, "{context}");
        }
    }
}

/// WAVE_READY at 30, then an instruction at 40: the stall since the (gfx10/11: one cycle
/// earlier) ready time is folded into the instruction, which starts there.
#[test]
fn a_stall_is_folded_into_the_next_instruction_of_every_class() {
    for gen in GENS {
        for id in 0..gen.ids() {
            let Rule::Record(category, cycles) = rule(gen, id) else {
                continue;
            };
            let mut trace = stream(gen);
            trace
                .at(10)
                .wave_start(Unit::wave(0))
                .at(30)
                .wave_ready(1)
                .at(40)
                .inst(0, u64::from(id));
            trace.at(300).wave_end(Unit::wave(0));
            let wave = one_wave(&trace);
            let ready = 30 - gen.ready_shift();
            let stall = 40 - ready;
            assert_eq!(
                wave.insts,
                with_endpgm(
                    vec![(category, stall as u32, cycles + stall as i32, ready)],
                    300
                ),
                "{gen:?} id {id}"
            );
            assert_eq!(
                wave.timeline,
                [
                    (IDLE, (ready - 10) as i32),
                    (STALL, stall as i32),
                    (EXEC, 260)
                ],
                "{gen:?} id {id}"
            );
        }
    }
}

/// VALU_INST is a 1-cycle VALU record, with the stall rule of any instruction.
#[test]
fn valu_inst_tokens_are_one_cycle_valu_records() {
    for gen in GENS {
        let mut trace = stream(gen);
        trace
            .at(10)
            .wave_start(Unit::wave(0))
            .at(20)
            .valu(0)
            .at(30)
            .wave_ready(1);
        trace.at(35).valu(0).at(50).wave_end(Unit::wave(0));
        let wave = one_wave(&trace);
        let ready = 30 - gen.ready_shift();
        let stall = 35 - ready;
        assert_eq!(
            wave.insts,
            [
                (VALU, 0, 1, 20),
                (VALU, stall as u32, 1 + stall as i32, ready),
                (MESSAGE, 0, 14, 36)
            ],
            "{gen:?}"
        );
    }
}

/// A VALU_INST with the wave64 bit is one VALU record of two cycles (§4.1); a stall before it is
/// folded in as for every record.
#[test]
fn a_wave64_valu_inst_takes_two_cycles() {
    for gen in GENS {
        let mut trace = stream(gen);
        trace
            .at(10)
            .wave_start(Unit::wave(0))
            .at(20)
            .valu_wave64(0)
            .at(30)
            .wave_ready(1);
        trace.at(35).valu_wave64(0).at(40).valu(0);
        trace.at(50).wave_end(Unit::wave(0));
        let wave = one_wave(&trace);
        let ready = 30 - gen.ready_shift();
        let stall = 35 - ready;
        assert_eq!(
            wave.insts,
            [
                (VALU, 0, 2, 20),
                (VALU, stall as u32, 2 + stall as i32, ready),
                (VALU, 0, 1, 40),
                (MESSAGE, 0, 9, 41)
            ],
            "{gen:?}"
        );
    }
}

/// Immediates (IMM_ONE, IMMEDIATE by mask, the barrier INST) start where the previous record
/// ended and wait until their token: stall = token − start, duration = stall + 1.
#[test]
fn immediates_wait_from_the_previous_records_end() {
    for gen in GENS {
        let barrier = |t: &mut Rdna| {
            t.inst(0, 19);
        };
        let imm_one = |t: &mut Rdna| {
            t.imm_one(0);
        };
        let immediate = |t: &mut Rdna| {
            t.immediate(1);
        };
        let forms: [&dyn Fn(&mut Rdna); 3] = [&imm_one, &immediate, &barrier];
        for (form, put) in forms.iter().enumerate() {
            // SMEM (1 cycle) at 20, the immediate at 50, another at 51, WAVE_END at 80.
            let mut trace = stream(gen);
            trace
                .at(10)
                .wave_start(Unit::wave(0))
                .at(20)
                .inst(0, 1)
                .at(50);
            put(&mut trace);
            trace.at(51);
            put(&mut trace);
            trace.at(80).wave_end(Unit::wave(0));
            let wave = one_wave(&trace);
            let context = format!("{gen:?} form {form}");
            assert_eq!(
                wave.insts,
                [
                    (SMEM, 0, 1, 20),
                    (IMMED, 29, 30, 21),
                    (IMMED, 0, 1, 51),
                    (MESSAGE, 0, 28, 52)
                ],
                "{context}"
            );
            // EXEC from the SMEM to the first immediate's start, WAIT to one past its token,
            // WAIT again for the second (merged), EXEC to the end.
            assert_eq!(
                wave.timeline,
                [(IDLE, 10), (EXEC, 1), (WAIT, 31), (EXEC, 28)],
                "{context}"
            );
        }
    }
}

/// s_trap: a CONTEXT record; nothing is recorded in the handler, but its stalls count; the
/// return from trap stretches the CONTEXT record to one past its token; the next record folds
/// in the stall begun in the handler.
#[test]
fn a_trap_hides_the_handler_and_its_return_resumes_the_wave() {
    for gen in GENS {
        let mut trace = stream(gen);
        trace
            .at(10)
            .wave_start(Unit::wave(0))
            .at(20)
            .inst(0, 6)
            .at(25)
            .valu(0);
        trace
            .at(28)
            .wave_ready(1)
            .at(30)
            .inst(0, 117)
            .at(40)
            .inst(0, 0);
        trace.at(100).wave_end(Unit::wave(0));
        let wave = one_wave(&trace);
        let ready = 28 - gen.ready_shift();
        let stall = 40 - ready;
        assert_eq!(
            wave.insts,
            [
                (CONTEXT, 0, 11, 20),
                (SALU, stall as u32, 1 + stall as i32, ready),
                (MESSAGE, 0, 59, 41)
            ],
            "{gen:?}"
        );
        assert_eq!(
            wave.timeline,
            [
                (IDLE, (ready - 10) as i32),
                (STALL, stall as i32),
                (EXEC, 60)
            ],
            "{gen:?}"
        );
    }
}

/// A context save (WAVE_START count 66) adds a CONTEXT record and traps the wave; the restore
/// (count 68) stretches it to one past its token and leaves the wave trapped until the return
/// from trap, which stretches it again.
#[test]
fn a_context_save_and_restore_is_one_context_record() {
    for gen in GENS {
        let mut trace = stream(gen);
        trace
            .at(10)
            .wave_start(Unit::wave(0))
            .at(20)
            .inst(0, 0)
            .at(30)
            .wave_start_count(Unit::wave(0), 66);
        trace
            .at(50)
            .wave_start_count(Unit::wave(0), 68)
            .at(55)
            .inst(0, 0);
        trace
            .at(60)
            .inst(0, 117)
            .at(70)
            .inst(0, 0)
            .at(90)
            .wave_end(Unit::wave(0));
        let wave = one_wave(&trace);
        assert_eq!(
            wave.insts,
            [
                (SALU, 0, 1, 20),
                (CONTEXT, 0, 31, 30),
                (SALU, 0, 1, 70),
                (MESSAGE, 0, 19, 71)
            ],
            "{gen:?}"
        );
    }
}

/// A MISC save_context flag traps every traced wave: its records stop until the return from
/// trap; a wave that ends trapped still gets its s_endpgm record at WAVE_END (rdna.md §4.4).
#[test]
fn misc_save_context_traps_the_traced_waves() {
    for gen in GENS {
        let mut trace = stream(gen);
        trace
            .at(10)
            .wave_start(Unit::wave(0))
            .wave_start(Unit::wave(1))
            .at(20)
            .inst(0, 0)
            .inst(1, 0);
        trace
            .at(30)
            .misc(MISC_SAVE_CONTEXT)
            .at(40)
            .inst(0, 0)
            .inst(1, 0);
        trace
            .at(50)
            .inst(1, 117)
            .at(60)
            .inst(1, 0)
            .at(90)
            .wave_end(Unit::wave(0))
            .wave_end(Unit::wave(1));
        let (waves, _) = decode(&trace);
        assert_eq!(waves.len(), 2, "{gen:?}");
        assert_eq!(
            waves[0].insts,
            [(SALU, 0, 1, 20), (MESSAGE, 0, 69, 21)],
            "{gen:?}"
        );
        assert_eq!(
            waves[1].insts,
            [(SALU, 0, 1, 20), (SALU, 0, 1, 60), (MESSAGE, 0, 29, 61)],
            "{gen:?}"
        );
    }
}

/// gfx12 only: a VALU record the walk matches to a `v_mov_b64` line lasts at least its stall + 2
/// cycles (docs/timing/stitch.md); a record whose PC the trace pins (here the wave's first) is not
/// matched, so not stretched. The kernel starts at 0x1000 (PGM_LO = 0x10).
#[test]
fn gfx12_v_mov_b64_lasts_its_stall_plus_two() {
    const CODE: &[(u64, u64, &str)] = &[
        (0x1000, 8, "v_mov_b64 v[0:1], v[2:3]"),
        (0x1008, 8, "v_mov_b64 v[4:5], v[6:7]"),
        (0x1010, 4, "v_add_f32 v0, v1, v2"),
        (0x1014, 4, "s_endpgm"),
    ];
    for gen in GENS {
        let mut trace = stream(gen);
        trace
            .compute_reg(0x0C, 0x10)
            .at(10)
            .wave_start(Unit::wave(0))
            .at(20)
            .valu(0);
        trace
            .at(30)
            .wave_ready(1)
            .at(35)
            .valu(0)
            .at(40)
            .valu(0)
            .at(60)
            .wave_end(Unit::wave(0));
        let (waves, _) = decode_with(&trace, &mut Listing(CODE.to_vec(), 0));
        assert_eq!(waves.len(), 1, "{gen:?}");
        let ready = 30 - gen.ready_shift();
        let stall = 35 - ready;
        // The first record takes the wave's start PC as pinned, without the match rules; the
        // s_endpgm record is made at WAVE_END, before stitching: from the last token's end.
        let second = stall as i32 + if gen == Gen::Gfx12 { 2 } else { 1 };
        assert_eq!(
            waves[0].insts,
            [
                (VALU, 0, 1, 20),
                (VALU, stall as u32, second, ready),
                (VALU, 0, 1, 40),
                (MESSAGE, 0, 19, 41)
            ],
            "{gen:?}"
        );
    }
}

/// A wave without WAVE_END ends 4 cycles past its last record's end, whatever the times of its
/// later tokens (here an INST of an id that makes no record): the damaged-stream goldens show it.
#[test]
fn an_unfinished_wave_ends_four_cycles_after_its_last_record() {
    for gen in GENS {
        assert_eq!(rule(gen, 20), Rule::Nothing);
        let mut trace = stream(gen);
        trace.at(10).wave_start(Unit::wave(0)).at(20).inst(0, 0);
        trace.at(100).inst(0, 20);
        let wave = one_wave(&trace);
        assert_eq!(wave.insts, [(SALU, 0, 1, 20)], "{gen:?}");
        assert_eq!((wave.begin, wave.end), (10, 20 + 1 + 4), "{gen:?}");
        assert_eq!(wave.timeline, [(IDLE, 10)], "{gen:?}");
    }
}

/// A wave that a context restore creates has no start PC: its first PC is the NEW_PC after its
/// return from trap, and the walk goes on from there.
#[test]
fn a_restored_wave_is_stitched_from_its_return_pc() {
    const CODE: &[(u64, u64, &str)] = &[
        (0x2000, 4, "s_mov_b32 s0, 0"),
        (0x2004, 4, "v_add_f32 v0, v1, v2"),
        (0x2008, 4, "s_endpgm"),
    ];
    for gen in GENS {
        let mut trace = stream(gen);
        trace
            .at(10)
            .wave_start_count(Unit::wave(0), 68)
            .at(30)
            .inst(0, 117);
        trace
            .at(35)
            .new_pc(0, 0x2000)
            .at(40)
            .inst(0, 0)
            .at(50)
            .valu(0);
        trace.at(70).wave_end(Unit::wave(0));
        let (waves, _) = decode_with(&trace, &mut Listing(CODE.to_vec(), 0));
        assert_eq!(waves.len(), 1, "{gen:?}");
        assert_eq!(
            waves[0].insts,
            [(SALU, 0, 1, 40), (VALU, 0, 1, 50), (MESSAGE, 0, 19, 51)],
            "{gen:?}"
        );
        assert_eq!(waves[0].pcs, [0x2000, 0x2004, 0x2008], "{gen:?}");
    }
}

/// gfx12 with HEADER bit 59: an `s_barrier_wait` that produced no token becomes an IMMED record
/// from the previous record's end to the next record's start, and a WAIT span of that length is
/// cut out of the timeline entry it falls in (docs/timing/stitch.md §4).
#[test]
fn gfx12_tokenless_barrier_wait_gets_a_record_between_its_neighbours() {
    const CODE: &[(u64, u64, &str)] = &[
        (0x3000, 4, "s_barrier_signal -1"),
        (0x3004, 4, "s_barrier_wait 0xffff"),
        (0x3008, 4, "v_add_f32 v0, v1, v2"),
        (0x300c, 4, "s_endpgm"),
    ];
    let mut trace = Rdna::new(Header {
        exclude_barrier_wait: true,
        ..header(Gen::Gfx12)
    });
    trace
        .compute_reg(0x0C, 0x30)
        .at(10)
        .wave_start(Unit::wave(0))
        .at(20)
        .inst(0, 122);
    trace.at(40).valu(0).at(60).wave_end(Unit::wave(0));
    let (waves, _) = decode_with(&trace, &mut Listing(CODE.to_vec(), 0));
    assert_eq!(waves.len(), 1);
    let wave = &waves[0];
    // MESSAGE (s_barrier_signal) ends at 21; the VALU starts at 40.
    assert_eq!(
        wave.insts,
        [
            (MESSAGE, 0, 1, 20),
            (IMMED, 0, 40 - 21, 21),
            (VALU, 0, 1, 40),
            (MESSAGE, 0, 19, 41)
        ]
    );
    assert_eq!(wave.pcs, [0x3000, 0x3004, 0x3008, 0x300c]);
    // EXEC from 20 to 60, split at 21 around 19 cycles of WAIT.
    assert_eq!(
        wave.timeline,
        [(IDLE, 10), (EXEC, 1), (WAIT, 19), (EXEC, 20)]
    );
    // Without the header bit the line is an ordinary immediate line that takes no record.
    let mut trace = stream(Gen::Gfx12);
    trace
        .compute_reg(0x0C, 0x30)
        .at(10)
        .wave_start(Unit::wave(0))
        .at(20)
        .inst(0, 122);
    trace.at(40).valu(0).at(60).wave_end(Unit::wave(0));
    let (waves, _) = decode_with(&trace, &mut Listing(CODE.to_vec(), 0));
    assert_eq!(waves[0].insts.len(), 3);
    assert_eq!(waves[0].pcs, [0x3000, 0x3008, 0x300c]);
}

//! Unit tests of the gfx9 parser on encoded token streams.

use super::header::HEADER_BYTES;
use super::tokens::encode::Encoder;
use super::tokens::{inst, issue, perf, reg, reg_cs, wave as wf, DELTA, SHADER_DATA};
use super::*;
use crate::arch::registers::cs;
use crate::isa::{IsaError, IsaProvider};
use crate::records::{Category, EventKind, Inst, Occupancy, Realtime, ShaderData, Wave, WaveState};
use crate::sink::{Emitter, Filter, Record};

/// Every address holds a 4-byte SALU instruction; the queried PCs are recorded. Every code
/// object has the funcmap in `.1`, if any.
#[derive(Default)]
struct SaluEverywhere(
    Vec<Pc>,
    Option<std::sync::Arc<crate::isa::funcmap::Funcmap>>,
);

impl IsaProvider for SaluEverywhere {
    fn funcmap(&mut self, _: u64) -> Option<std::sync::Arc<crate::isa::funcmap::Funcmap>> {
        self.1.clone()
    }
    fn has_funcmaps(&self) -> bool {
        self.1.is_some()
    }

    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        self.0.push(pc);
        text.clear();
        text.extend_from_slice(b"s_mov_b32 s0, 0");
        Ok(4)
    }
}

#[derive(Debug, Default)]
struct Decoded {
    /// Record types in callback order.
    order: Vec<RecordKind>,
    perf: Vec<PerfEvent>,
    shader_data: Vec<ShaderData>,
    gfxip: Vec<u32>,
    occupancy: Vec<Occupancy>,
    /// (wave record, its instructions, its timeline)
    waves: Vec<(Wave, Vec<Inst>, Vec<WaveState>)>,
    events: Vec<Event>,
    realtime: Vec<Realtime>,
    markers: Vec<crate::records::Marker>,
}

fn decode(
    header: u64,
    tokens: &[u8],
    isa: &mut SaluEverywhere,
) -> (Decoded, Result<(), DecodeError>) {
    let mut out = Decoded::default();
    let mut data = header.to_le_bytes().to_vec();
    data.extend_from_slice(tokens);
    let mut sink = |r: Record<'_>| {
        out.order.push(r.kind());
        match r {
            Record::PerfEvent(rows) => out.perf.extend_from_slice(rows),
            Record::ShaderData(rows) => out.shader_data.extend_from_slice(rows),
            Record::Gfxip(v) => out.gfxip.push(v),
            Record::Occupancy(rows) => out.occupancy.extend_from_slice(rows),
            Record::Wave(w) => {
                // SAFETY: the arrays are valid for the duration of the callback.
                let insts = match w.instructions_size {
                    0 => Vec::new(),
                    n => unsafe { std::slice::from_raw_parts(w.instructions_array, n as usize) }
                        .to_vec(),
                };
                let timeline = match w.timeline_size {
                    0 => Vec::new(),
                    n => {
                        unsafe { std::slice::from_raw_parts(w.timeline_array, n as usize) }.to_vec()
                    }
                };
                out.waves.push((*w, insts, timeline));
            }
            Record::Event(e) => out.events.push(*e),
            Record::Realtime(rows) => out.realtime.extend_from_slice(rows),
            Record::Marker(rows) => out.markers.extend_from_slice(rows),
            _ => {}
        }
        0
    };
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), isa);
    let result = session.decode_buffer(&data);
    drop(session);
    (out, result)
}

/// `legacy 0x11 | version << 13 | all SIMDs << 16 | dcu << 20`.
fn header(version: u64, dcu: u64) -> u64 {
    0x11 | version << 13 | 0xF << 16 | dcu << 20
}

/// Token builders following SQTT_FORMAT §1.7 (`step` sets the bit-4 time increment).
trait Tokens {
    fn wave_start(&mut self, cu: u64, simd: u64, slot: u64, me: u64, pipe: u64) -> &mut Self;
    fn wave_end(&mut self, cu: u64, simd: u64, slot: u64) -> &mut Self;
    fn issue(&mut self, simd: u64, slot: u64, status: u64) -> &mut Self;
    fn inst(&mut self, simd: u64, slot: u64, inst_type: u64) -> &mut Self;
    fn reg_cs_priv(&mut self, me_raw: u64, pipe: u64, addr: u64, data: u64) -> &mut Self;
    fn userdata2(&mut self, me_raw: u64, pipe: u64, data: u64) -> &mut Self;
}

impl Tokens for Encoder {
    fn wave_start(&mut self, cu: u64, simd: u64, slot: u64, me: u64, pipe: u64) -> &mut Self {
        let f = [
            (DELTA, 1),
            (wf::CU, cu),
            (wf::SIMD, simd),
            (wf::SLOT, slot),
            (wf::ME, me),
            (wf::PIPE, pipe),
        ];
        self.token(3, 2, &f)
    }
    fn wave_end(&mut self, cu: u64, simd: u64, slot: u64) -> &mut Self {
        self.token(
            6,
            1,
            &[(DELTA, 1), (wf::CU, cu), (wf::SIMD, simd), (wf::SLOT, slot)],
        )
    }
    fn issue(&mut self, simd: u64, slot: u64, status: u64) -> &mut Self {
        self.token(
            13,
            2,
            &[
                (DELTA, 1),
                (issue::SIMD, simd),
                (issue::STATUSES, status << (2 * slot)),
            ],
        )
    }
    fn inst(&mut self, simd: u64, slot: u64, inst_type: u64) -> &mut Self {
        self.token(
            10,
            1,
            &[
                (DELTA, 1),
                (inst::SIMD, simd),
                (inst::SLOT, slot),
                (inst::TYPE, inst_type),
            ],
        )
    }
    fn reg_cs_priv(&mut self, me_raw: u64, pipe: u64, addr: u64, data: u64) -> &mut Self {
        self.token(
            15,
            3,
            &[
                (reg_cs::ME, me_raw),
                (reg_cs::PIPE, pipe),
                (reg_cs::ADDR, addr),
                (reg_cs::DATA, data),
            ],
        )
    }
    fn userdata2(&mut self, me_raw: u64, pipe: u64, data: u64) -> &mut Self {
        let f = [
            (reg::ME, me_raw),
            (reg::PIPE, pipe),
            (reg::ENABLE, 1),
            (reg::ADDR, 0xC342),
            (reg::DATA, data),
        ];
        self.token(2, 4, &f)
    }
}

/// Kernel entry 0x7F00_0000_1800 on (me 1, pipe 0): REG me_raw 0 is me 1.
fn program(e: &mut Encoder, entry: u64) {
    e.reg_cs_priv(0, 0, cs::PGM_LO as u64, (entry >> 8) & 0xFFFF_FFFF);
    e.reg_cs_priv(0, 0, cs::PGM_HI as u64, entry >> 40);
}

/// One wave on `cu`, simd 1, slot 2, then its end 52 cycles later; only the traced CU
/// sends instruction tokens (an SALU: ISSUE, then INST).
fn one_wave(e: &mut Encoder, cu: u64, traced: bool) {
    e.wave_start(cu, 1, 2, 1, 0);
    if traced {
        e.issue(1, 2, 2).inst(1, 2, 1);
    } else {
        e.misc(2, 0);
    }
    e.misc(10, 0).wave_end(cu, 1, 2);
}

#[test]
fn the_header_cu_selects_the_traced_waves() {
    const ENTRY: u64 = 0x7F00_0000_1800;
    let mut e = Encoder::default();
    program(&mut e, ENTRY);
    one_wave(&mut e, 3, false);
    one_wave(&mut e, 2, true);
    let (out, result) = decode(header(6, 2), &e.bytes, &mut SaluEverywhere::default());
    assert_eq!(result, Ok(()));
    assert_eq!(out.gfxip, [9]);
    // Occupancy for both CUs, sorted by time, PC = the kernel entry.
    let rows: Vec<_> = out
        .occupancy
        .iter()
        .map(|o| (o.cu, o.is_start(), o.time, o.pc))
        .collect();
    let pc = Pc::new(ENTRY, 0);
    assert_eq!(
        rows,
        [
            (3, true, 4, pc),
            (3, false, 56, pc),
            (2, true, 60, pc),
            (2, false, 112, pc)
        ]
    );
    // Only CU 2 is traced: one wave, its SALU stitched at the entry.
    assert_eq!(out.waves.len(), 1);
    let (w, insts, timeline) = &out.waves[0];
    assert_eq!(
        (w.cu, w.simd, w.wave_id, w.begin_time, w.end_time),
        (2, 1, 2, 60, 112)
    );
    assert_eq!(w.dispatcher, 1 << 4);
    assert_eq!(insts.len(), 1);
    assert_eq!(
        (insts[0].category(), insts[0].time, insts[0].pc),
        (Category::Salu as u8, 64, pc)
    );
    let spans: Vec<_> = timeline.iter().map(|s| (s.kind, s.duration)).collect();
    assert_eq!(
        spans,
        [(1, 4), (2, 48)],
        "IDLE until the issue, EXEC until the end"
    );
}

#[test]
fn a_cu_above_15_is_never_traced() {
    // tinygrad writes the SE number at bit 24: DCU 16 for odd SEs, which no 4-bit CU field
    // can name.
    let mut e = Encoder::default();
    one_wave(&mut e, 0, false);
    let (out, _) = decode(header(4, 16), &e.bytes, &mut SaluEverywhere::default());
    assert!(out.waves.is_empty());
    assert_eq!(out.occupancy.len(), 2);
    // With DCU 0 the same wave is traced: a WAVE record without instructions.
    let (out, _) = decode(header(4, 0), &e.bytes, &mut SaluEverywhere::default());
    assert_eq!(out.waves.len(), 1);
    let (w, insts, timeline) = &out.waves[0];
    assert!(insts.is_empty() && w.instructions_array.is_null());
    let spans: Vec<_> = timeline.iter().map(|s| (s.kind, s.duration)).collect();
    assert_eq!(spans, [(1, 52)], "one IDLE span from start to end");
}

#[test]
fn gfx90a_gfx942_and_gfx950_headers_decode_alike() {
    let mut e = Encoder::default();
    program(&mut e, 0x7F00_0000_1800);
    one_wave(&mut e, 0, true);
    let mut outputs = Vec::new();
    for version in [4, 5, 6] {
        let (out, result) = decode(header(version, 0), &e.bytes, &mut SaluEverywhere::default());
        assert_eq!(result, Ok(()));
        assert_eq!(out.waves.len(), 1);
        outputs.push(format!("{out:?}").replace(|c: char| c == 'x' || c.is_ascii_hexdigit(), ""));
    }
    // Record contents agree (pointer values aside).
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
    let (_, result) = decode(header(7, 0), &e.bytes, &mut SaluEverywhere::default());
    assert_eq!(
        result,
        Err(DecodeError::new(ErrorKind::UnknownHeader, 0, 0))
    );
}

#[test]
fn each_dispatcher_keeps_its_own_kernel_entry() {
    let mut e = Encoder::default();
    program(&mut e, 0x7F00_0000_1800);
    // me_raw 1 is me 0: a second kernel on (me 0, pipe 1).
    e.reg_cs_priv(
        1,
        1,
        cs::PGM_LO as u64,
        (0x7F00_0000_4000 >> 8) & 0xFFFF_FFFF,
    );
    e.reg_cs_priv(1, 1, cs::PGM_HI as u64, 0x7F00_0000_4000 >> 40);
    e.wave_start(5, 0, 0, 1, 0)
        .wave_start(5, 0, 1, 0, 1)
        .wave_end(5, 0, 0)
        .wave_end(5, 0, 1);
    let (out, _) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
    let starts: Vec<_> = out
        .occupancy
        .iter()
        .filter(|o| o.is_start())
        .map(|o| o.pc.address)
        .collect();
    assert_eq!(starts, [0x7F00_0000_1800, 0x7F00_0000_4000]);
    let me_pipe: Vec<_> = out
        .occupancy
        .iter()
        .filter(|o| o.is_start())
        .map(|o| (o.flags().me_id, o.flags().pipe_id))
        .collect();
    assert_eq!(me_pipe, [(1, 0), (0, 1)]);
}

#[test]
fn code_object_markers_make_pcs_relative() {
    const BASE: u64 = 0x7FA3_5940_C000;
    let mut e = Encoder::default();
    program(&mut e, BASE + 0x1800);
    e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
    e.userdata2(0, 0, 0x0008_0201);
    for (kind, word) in [
        (2, BASE & 0xFFFF_FFFF),
        (3, BASE >> 32),
        (1, 0x5000),
        (4, 0),
    ] {
        e.userdata2(0, 0, 4 | kind << 8).userdata2(0, 0, word);
    }
    // TAIL: load, from start, legacy id 4.
    e.userdata2(0, 0, 4).userdata2(0, 0, 4 << 2 | 2);
    one_wave(&mut e, 0, true);
    let mut isa = SaluEverywhere::default();
    let (out, _) = decode(header(6, 0), &e.bytes, &mut isa);
    let entry = Pc::new(0x1800, 4);
    assert!(out.occupancy.iter().all(|o| o.pc == entry));
    assert_eq!(out.waves[0].1[0].pc, entry);
    assert_eq!(
        isa.0.first(),
        Some(&entry),
        "the ISA callback is asked with {{vaddr, id}}"
    );
    let loads: Vec<_> = out
        .events
        .iter()
        .filter(|e| e.kind == EventKind::CodeObjectLoad as u32)
        .collect();
    assert_eq!(loads.len(), 1);
    // SAFETY: every variant of the payload union is a plain 8-byte value.
    assert_eq!(unsafe { loads[0].payload.code_object_id }, 4);
}

/// docs/timing/stitch.md §6: a code object whose range overlaps one loaded before it is
/// loaded (and reported) but translates nothing; the wave's PCs stay raw, with id 0.
#[test]
fn a_code_object_overlapping_an_earlier_one_leaves_pcs_raw() {
    const FIRST: u64 = 0x7F4C_EF62_0000;
    const KERNEL: u64 = 0x7F4C_ED42_0000;
    let mut e = Encoder::default();
    program(&mut e, KERNEL + 0x8600);
    e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
    // The rocprofv2-era tool writes the low size again as SIZE_HI (ranges of ~2^47 bytes).
    for (id, base, size) in [(2, FIRST, 0x8000), (10, KERNEL, 0x1_34B1)] {
        for (kind, word) in [
            (1, size),
            (4, size),
            (2, base & 0xFFFF_FFFF),
            (3, base >> 32),
        ] {
            e.userdata2(0, 0, 4 | kind << 8).userdata2(0, 0, word);
        }
        e.userdata2(0, 0, 4).userdata2(0, 0, id << 2 | 2);
    }
    one_wave(&mut e, 0, true);
    let mut isa = SaluEverywhere::default();
    let (out, _) = decode(header(5, 0), &e.bytes, &mut isa);
    let raw = Pc::new(KERNEL + 0x8600, 0);
    assert!(out.occupancy.iter().all(|o| o.pc == raw));
    assert_eq!(out.waves[0].1[0].pc, raw);
    assert_eq!(
        isa.0.first(),
        Some(&raw),
        "the ISA callback is asked the raw address"
    );
    let loads = out
        .events
        .iter()
        .filter(|e| e.kind == EventKind::CodeObjectLoad as u32)
        .count();
    assert_eq!(loads, 2);
}

#[test]
fn shader_data_words_of_a_marked_kernel_become_markers() {
    const BASE: u64 = 0x7FA3_5940_C000;
    let mut e = Encoder::default();
    program(&mut e, BASE + 0x1800);
    e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
    for (kind, word) in [(2, BASE & 0xFFFF_FFFF), (3, BASE >> 32), (1, 0x5000)] {
        e.userdata2(0, 0, 4 | kind << 8).userdata2(0, 0, word);
    }
    e.userdata2(0, 0, 4).userdata2(0, 0, 4 << 2);
    e.wave_start(3, 1, 2, 1, 0);
    let shader_data = |e: &mut Encoder, value: u64| {
        let f = [
            (wf::CU, 3),
            (wf::SIMD, 1),
            (wf::SLOT, 2),
            (SHADER_DATA, value),
        ];
        e.token(12, 3, &f);
    };
    shader_data(&mut e, 1 << 2 | 2); // enter function 1
    shader_data(&mut e, 1); // bare exit
    e.wave_end(3, 1, 2);
    let funcmap = crate::isa::funcmap::Funcmap::parse(b"F:1:body@k.cpp:7\n");
    let mut isa = SaluEverywhere(Vec::new(), Some(std::sync::Arc::new(funcmap)));
    let (out, _) = decode(header(6, 0), &e.bytes, &mut isa);
    assert_eq!(
        out.shader_data.len(),
        2,
        "SHADERDATA records are still delivered"
    );
    let markers: Vec<_> = out
        .markers
        .iter()
        .map(|m| (m.marker_id, m.marker_kind, m.marker_flags, m.kernel_entry))
        .collect();
    let entry = Pc::new(0x1800, 4);
    assert_eq!(markers, [(1, 1, 2 | 4, entry), (1, 1, 1, entry)]);
    // SAFETY: the test reads the name only while the funcmap is alive.
    let name = unsafe { std::ffi::CStr::from_ptr(out.markers[0].name) };
    assert_eq!(name.to_str(), Ok("body"));
}

#[test]
fn wave_buffers_kept_from_an_earlier_call_start_clean() {
    let mut clean = Encoder::default();
    program(&mut clean, 0x7F00_0000_1800);
    one_wave(&mut clean, 0, true);
    let waves = |bytes: &[u8]| {
        let (out, _) = decode(header(6, 0), bytes, &mut SaluEverywhere::default());
        out.waves
            .into_iter()
            .map(|(w, insts, timeline)| (w.begin_time, w.end_time, w.contexts, insts, timeline))
            .collect::<Vec<_>>()
    };
    let bytes = clean.bytes.clone();
    let fresh = std::thread::spawn(move || waves(&bytes)).join().unwrap();
    // Abandoned waves left mid-trap, with a stall and a placeholder still queued.
    let mut dirty = Encoder::default();
    program(&mut dirty, 0x7F00_0000_1800);
    for slot in 0..4 {
        dirty.wave_start(0, 1, slot, 1, 0);
        dirty
            .issue(1, slot, 1)
            .issue(1, slot, 2)
            .issue(1, slot, 2)
            .inst(1, slot, 1);
    }
    dirty.misc(0, tokens::misc::SAVE_CONTEXT);
    dirty.token(3, 2, &[(wf::SIMD, 1), (wf::SLOT, 2), (wf::COUNT, 100)]);
    waves(&dirty.bytes);
    assert_eq!(waves(&clean.bytes), fresh);
}

#[test]
fn a_wave_slot_above_9_is_corrupt_data_after_the_earlier_records() {
    let mut e = Encoder::default();
    one_wave(&mut e, 0, true);
    let corrupt_at = HEADER_BYTES + e.bytes.len();
    e.wave_end(0, 0, 12);
    one_wave(&mut e, 1, false);
    let (out, result) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
    let invalid_slot = DecodeError::new(ErrorKind::InvalidWaveSlot, 0, corrupt_at);
    assert_eq!(result, Err(invalid_slot));
    assert_eq!(
        out.waves.len(),
        1,
        "the wave completed before the corrupt token is delivered"
    );
    assert_eq!(out.occupancy.len(), 2);
}

#[test]
fn barrier_and_endpgm_messages() {
    // s_waitcnt (immediate), s_barrier (OTHER_MSG + immediate = one IMMED), s_endpgm.
    let mut e = Encoder::default();
    e.wave_start(0, 0, 0, 1, 0);
    e.issue(0, 0, 2).inst(0, 0, 1);
    e.misc(5, 0).issue(0, 0, 3);
    e.issue(0, 0, 2).inst(0, 0, 15).issue(0, 0, 3);
    e.misc(3, 0).issue(0, 0, 2).inst(0, 0, 15).wave_end(0, 0, 0);
    let (out, _) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
    let got: Vec<_> = out.waves[0].1.iter().map(|i| i.category()).collect();
    let (salu, immed, msg) = (
        Category::Salu as u8,
        Category::Immed as u8,
        Category::Message as u8,
    );
    assert_eq!(got, [salu, immed, immed, msg]);
}

#[test]
fn side_records_and_their_order() {
    let mut e = Encoder::default();
    e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
    // AGENT_INFO: counter interval 100 cycles.
    e.userdata2(0, 0, 6 | 1 << 8 | 100 << 12);
    one_wave(&mut e, 0, true);
    // USERDATA_3 realtime group: header, previous low, high, low.
    for word in [5, 0x10, 0x2, 0x20] {
        e.token(
            2,
            4,
            &[(reg::ENABLE, 1), (reg::ADDR, 0xC343), (reg::DATA, word)],
        );
    }
    // s_ttracedata from CU 3 simd 1 slot 4, then two perf samples of CU 2 bank 1, 400 apart.
    e.token(
        12,
        3,
        &[
            (wf::CU, 3),
            (wf::SIMD, 1),
            (wf::SLOT, 4),
            (SHADER_DATA, 0xDEAD_BEEF),
        ],
    );
    let counters = |a| {
        [
            (perf::CU, 2),
            (perf::BANK, 1),
            (perf::COUNTERS[0], a),
            (perf::COUNTERS[3], 7),
        ]
    };
    e.token(14, 4, &counters(11))
        .misc(100, 0)
        .token(14, 4, &counters(12));
    let (out, result) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
    assert_eq!(result, Ok(()));
    use RecordKind as K;
    let order: Vec<_> = out
        .order
        .iter()
        .filter(|k| **k != K::Event)
        .copied()
        .collect();
    assert_eq!(
        order,
        [
            K::Gfxip,
            K::Wave,
            K::Occupancy,
            K::Realtime,
            K::ShaderData,
            K::PerfEvent
        ]
    );
    assert_eq!(out.realtime.len(), 1);
    assert_eq!(out.realtime[0].realtime_clock, 2 << 32 | 0x20);
    let sd = out.shader_data[0];
    assert_eq!(
        (sd.value, sd.cu, sd.simd, sd.wave_id, sd.flags),
        (0xDEAD_BEEF, 3, 1, 4, 0)
    );
    // Samples at t - 4·cu, a gap marker one interval after the first (the samples are more
    // than an interval apart), and a closing marker one interval after the last.
    let perf: Vec<_> = out
        .perf
        .iter()
        .map(|p| (p.time, p.cu, p.bank, p.events0, p.events3))
        .collect();
    let (t0, t1) = (perf[0].0, perf[2].0);
    assert_eq!(t1 - t0, 400);
    assert_eq!(
        perf,
        [
            (t0, 2, 1, 11, 7),
            (t1, 2, 1, 0, 0),
            (t1, 2, 1, 12, 7),
            (t1 + 100, 2, 1, 0, 0)
        ]
    );
}

/// The thread keeps its parser between buffers: nothing of a buffer may reach the next one.
/// The first buffer sets a program, leaves a traced wave running (cut by the buffer's end), a
/// location occupied and the time of a perf bank's last sample; the second, decoded after it
/// and on a fresh thread, must decode alike.
#[test]
fn a_buffer_decodes_alike_after_any_other_on_the_thread() {
    // The protocol enabled, AGENT_INFO: counter interval 100 cycles; a sample of CU 2 of
    // `bank`.
    let timed_perf_sample = |e: &mut Encoder, bank| {
        e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
        e.userdata2(0, 0, 6 | 1 << 8 | 100 << 12);
        e.misc(200, 0).token(
            14,
            4,
            &[(perf::CU, 2), (perf::BANK, bank), (perf::COUNTERS[0], 5)],
        );
    };
    let mut first = Encoder::default();
    timed_perf_sample(&mut first, 2);
    program(&mut first, 0x7F00_0000_1800);
    first.wave_start(2, 1, 2, 1, 0).issue(1, 2, 2).inst(1, 2, 1);
    first.wave_start(3, 0, 4, 1, 0);
    let mut second = Encoder::default();
    timed_perf_sample(&mut second, 1);
    one_wave(&mut second, 3, false);
    one_wave(&mut second, 2, true);
    second.wave_end(3, 0, 4);
    let decode_second = |bytes: &[u8]| {
        let (mut out, result) = decode(header(6, 2), bytes, &mut SaluEverywhere::default());
        assert!(result.is_ok());
        // Where a wave's arrays live differs; their contents are compared.
        for (wave, _, _) in &mut out.waves {
            wave.timeline_array = std::ptr::null();
            wave.instructions_array = std::ptr::null();
        }
        format!("{out:?}")
    };
    let alone = std::thread::scope(|s| s.spawn(|| decode_second(&second.bytes)).join().unwrap());
    let (cut, _) = decode(header(6, 2), &first.bytes, &mut SaluEverywhere::default());
    assert_eq!(
        cut.waves.len(),
        1,
        "the first buffer's wave goes out cut short"
    );
    assert_eq!(cut.perf.len(), 2, "a timed sample and its closing marker");
    assert_eq!(decode_second(&second.bytes), alone);
}

/// The parser stays with the thread: what it keeps of a buffer's perf samples is bounded as
/// the emitter's pools are, whatever the buffer held.
#[test]
fn a_kept_parser_frees_a_huge_perf_buffer_and_keeps_a_small_one() {
    let mut parser = Parser {
        perf: vec![PerfEvent::default(); POOL_LIMIT + 1],
        ..Parser::default()
    };
    assert!(parser.recycle());
    assert_eq!(parser.perf.capacity(), 0);
    parser.perf = Vec::with_capacity(64);
    parser.perf.push(PerfEvent::default());
    assert!(parser.recycle());
    assert!(parser.perf.is_empty() && parser.perf.capacity() >= 64);
}

//! The walk's shortcuts (REG and MISC tokens and lean WAVE_ENDs handled at once on gfx10/11,
//! execution reports kept out of the gfx10/11 queue, runs of a kind on gfx12 and of wave starts
//! and ends in turn, padding taken with the token before it) decode random streams exactly as
//! the plain walk does.

use super::*;
use crate::arch::registers::cs;
use crate::arch::table::{bits, Field, TokenKind, UnitFields};
use crate::arch::userdata::{ENABLE, OPCODE_CODEOBJ, USERDATA_2};
use crate::isa::{IsaError, IsaProvider};
use crate::records::RecordKind;
use crate::sink::{Delivery, Emitter, Filter, Record};
use crate::testing::Rng;

/// gfx10 and gfx11 with every token through the reorder queue and every NOP through the walk.
struct Gfx10Queued;
struct Gfx11Queued;

impl Generation for Gfx10Queued {
    const ARCH: &'static RdnaArch = &gfx10::ARCH;
    const QUIET_AT_ONCE: bool = false;
    const EXEC_AT_ONCE: bool = false;
    const TAKE_PADDING: bool = false;
    spare_decoder!(Gfx10Queued);
}

impl Generation for Gfx11Queued {
    const ARCH: &'static RdnaArch = &gfx11::ARCH;
    const QUIET_AT_ONCE: bool = false;
    const EXEC_AT_ONCE: bool = false;
    const TAKE_PADDING: bool = false;
    spare_decoder!(Gfx11Queued);
}

/// gfx12 with every token, NOPs included, through the walk's jump on its kind.
struct Gfx12Stepped;

impl Generation for Gfx12Stepped {
    const ARCH: &'static RdnaArch = &gfx12::ARCH;
    const TAKE_RUNS: bool = false;
    const TAKE_PADDING: bool = false;
    spare_decoder!(Gfx12Stepped);
}

/// Every address holds a 4-byte SALU instruction.
struct SaluEverywhere;

impl IsaProvider for SaluEverywhere {
    fn disassemble(&mut self, _: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        text.clear();
        text.extend_from_slice(b"s_mov_b32 s0, 0");
        Ok(4)
    }
}

fn set(w: &mut u64, field: Field, value: u64) {
    let mask = (1u64 << field.width) - 1;
    *w = *w & !(mask << field.lo) | (value & mask) << field.lo;
}

/// A random stream of HEADER `version`, weighted to what the reorder queue and the gfx12 runs
/// must get right: runs of tokens of one time, quiet and reporting REG and MISC tokens,
/// WAVE_READY of the same clock, VALU instructions and the execution reports after them,
/// TIMESTAMPs that lose packets before WAVE_STARTs of running waves, register writes that
/// DISPATCH and WAVE_START records read. A token repeats the previous one's kind
/// with `repeat` percent chance; `tail` zero nibbles end the stream.
fn random_stream(
    rng: &mut Rng,
    arch: &RdnaArch,
    version: u64,
    tokens: usize,
    repeat: u64,
    tail: usize,
) -> Vec<u8> {
    use TokenKind as K;
    const KINDS: [TokenKind; 22] = [
        K::Reg,
        K::Reg,
        K::Reg,
        K::Misc,
        K::Misc,
        K::Timestamp,
        K::Timestamp,
        K::Time,
        K::WaveStart,
        K::WaveStart,
        K::WaveEnd,
        K::WaveReady,
        K::Inst,
        K::RegInit,
        K::Event,
        K::Immediate,
        K::WaveStartExt,
        K::AluExec,
        K::AluExec,
        K::VmemExec,
        K::ValuInst,
        K::ValuInst,
    ];
    let f = &arch.fields;
    let mut nibbles = Vec::new();
    let mut put =
        |w: u64, bits: usize| nibbles.extend((0..bits / 4).map(|i| (w >> (4 * i)) as u8 & 0xF));
    put(0x11 | version << 7, 64);
    let mut kind = K::Reg;
    for _ in 0..tokens {
        for _ in 0..rng.below(3) {
            put(0, 4);
        }
        if !rng.chance(repeat) {
            kind = KINDS[rng.below(KINDS.len() as u64) as usize];
        }
        let slots: Vec<usize> = (0..256).filter(|&i| arch.tokens[i].kind == kind).collect();
        let index = slots[rng.below(slots.len() as u64) as usize];
        let slot = arch.tokens[index];
        let mut w = index as u64 | rng.next_u64() << 8;
        // Mostly the traced unit; else one of two other units, whose waves start and end
        // again (their lean paths), or any unit.
        let unit = |w: &mut u64, fields: &UnitFields, rng: &mut Rng| {
            let (sa, wgp, simd) = match rng.below(10) {
                0..=5 => (0, 0, 0),
                6..=8 => (1, rng.below(2), 1),
                _ => (rng.next_u64(), rng.next_u64(), rng.next_u64()),
            };
            set(w, fields.sa, sa);
            set(w, fields.wgp, wgp);
            set(w, fields.simd, simd);
            set(w, fields.wave, rng.below(4));
        };
        match kind {
            K::Reg => {
                const TRACKED: [u16; 10] = [
                    cs::NUM_THREAD_X,
                    cs::NUM_THREAD_Y,
                    cs::NUM_THREAD_Z,
                    cs::PGM_LO,
                    cs::PGM_HI,
                    cs::DISPATCH_PKT_LO,
                    cs::DISPATCH_PKT_HI,
                    cs::PGM_RSRC1,
                    cs::PGM_RSRC2,
                    cs::PGM_RSRC3,
                ];
                let (compute, address) = match rng.below(3) {
                    0 => (0, USERDATA_2),
                    1 => (1, u64::from(TRACKED[rng.below(10) as usize])),
                    _ => (rng.below(2), rng.below(0x10000)),
                };
                set(&mut w, bits(15, 1), compute);
                set(&mut w, bits(16, 16), address);
                // The protocol words that load code objects and report the frequency.
                let word = match rng.below(4) {
                    0 => ENABLE,
                    1 => OPCODE_CODEOBJ | (rng.below(7) as u32) << 8,
                    2 => 6 | (rng.below(100) as u32) << 12,
                    _ => rng.next_u64() as u32 & 0xFFFF,
                };
                set(&mut w, bits(32, 32), u64::from(word));
            }
            K::Misc => set(
                &mut w,
                bits(16, 8),
                if rng.chance(60) { 0 } else { rng.next_u64() },
            ),
            K::Timestamp => {
                set(&mut w, bits(8, 1), u64::from(rng.chance(50)));
                set(&mut w, bits(9, 1), u64::from(rng.chance(30)));
                set(&mut w, bits(12, 36), rng.below(3) * rng.below(100));
            }
            K::WaveStart => {
                unit(&mut w, &f.wave_start, rng);
                set(&mut w, f.wave_start_count, rng.below(100));
            }
            K::WaveEnd => unit(&mut w, &f.wave_end, rng),
            K::WaveReady | K::Immediate => set(&mut w, bits(8, 16), rng.below(16)),
            K::Inst => {
                set(&mut w, f.inst_wave, rng.below(4));
                set(&mut w, f.inst_id, rng.below(128));
            }
            K::ValuInst => set(&mut w, f.valu_wave, rng.below(4)),
            _ => {}
        }
        if kind != K::Time && rng.chance(60) {
            w &= !(u64::from(slot.delta_mask) << slot.delta_shift);
        }
        if arch.tokens[(w & 0xFF) as usize].kind == kind {
            put(w, usize::from(slot.bits));
        }
    }
    nibbles.extend(std::iter::repeat_n(0, tail));
    nibbles
        .chunks(2)
        .map(|pair| pair[0] | pair.get(1).copied().unwrap_or(0) << 4)
        .collect()
}

/// Every record delivered, in order, with what its pointers point to.
fn transcript<G: Generation>(version: u8, data: &[u8], filter: Filter) -> Vec<String> {
    let mut out = Vec::new();
    let mut sink = |record: Record<'_>| {
        out.push(match record {
            Record::Wave(w) => {
                // SAFETY: non-empty arrays hold their counts for the duration of the
                // callback; empty ones are NULL.
                let insts = match w.instructions_size {
                    0 => &[][..],
                    n => unsafe { std::slice::from_raw_parts(w.instructions_array, n as usize) },
                };
                let timeline = match w.timeline_size {
                    0 => &[][..],
                    n => unsafe { std::slice::from_raw_parts(w.timeline_array, n as usize) },
                };
                let id = (
                    w.cu,
                    w.simd,
                    w.wave_id,
                    w.contexts,
                    w.begin_time,
                    w.end_time,
                );
                format!("wave {id:?} {insts:?} {timeline:?}")
            }
            Record::Marker(markers) => {
                let fields: Vec<_> = markers
                    .iter()
                    .map(|m| (m.shaderdata, m.marker_id, m.delay))
                    .collect();
                format!("markers {fields:?}")
            }
            other => format!("{other:?}"),
        });
        0
    };
    let mut isa = SaluEverywhere;
    let mut session = Session::new(Emitter::new(&mut sink, filter), &mut isa);
    RdnaDecoder::<G>::for_buffer(version).decode(&mut session, data);
    drop(session);
    out
}

/// Whether a transcript holds a traced wave or occupancy records: what the random streams are
/// for (a stream that decodes to neither tests nothing).
fn decoded_waves(transcript: &[String]) -> bool {
    transcript
        .iter()
        .any(|record| record.starts_with("wave") || record.starts_with("Occupancy"))
}

#[test]
fn tokens_kept_out_of_the_queue_decode_as_through_it() {
    let mut immediate = Filter::default();
    for kind in [
        RecordKind::Occupancy,
        RecordKind::Realtime,
        RecordKind::ShaderData,
        RecordKind::Marker,
    ] {
        immediate.set(kind, Delivery::Immediate);
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Streams in runs of a kind may hold no wave token; most must.
    let mut without_waves = 0;
    for round in 0..1000 {
        // Every other stream in runs of a kind (the runs of wave starts and ends taken at once),
        // ending anywhere up to 40 nibbles short of the end: where the walk's fast loop ends
        // decides where a run stops.
        let (repeat, tail) = match round % 2 {
            0 => (0, 40),
            _ => (60, rng.below(41) as usize),
        };
        let gfx11 = random_stream(&mut rng, &gfx11::ARCH, 3, 50 + round % 400, repeat, tail);
        let gfx10 = random_stream(&mut rng, &gfx10::ARCH, 2, 50 + round % 400, repeat, tail);
        for filter in [Filter::default(), immediate] {
            let queued = transcript::<Gfx11Queued>(3, &gfx11, filter);
            let waves = decoded_waves(&queued);
            assert!(waves || repeat > 0, "round {round}: {queued:?}");
            without_waves += usize::from(!waves);
            assert_eq!(
                transcript::<Gfx11>(3, &gfx11, filter),
                queued,
                "gfx11 round {round}"
            );
            let queued = transcript::<Gfx10Queued>(2, &gfx10, filter);
            let waves = decoded_waves(&queued);
            assert!(waves || repeat > 0, "round {round}: {queued:?}");
            without_waves += usize::from(!waves);
            assert_eq!(
                transcript::<Gfx10>(2, &gfx10, filter),
                queued,
                "gfx10 round {round}"
            );
        }
        // Without its HEADER the stream's first token finds the queue empty, holding the time
        // the thread's previous buffer left.
        let headless = &gfx11[8..];
        assert_eq!(
            transcript::<Gfx11>(3, headless, Filter::default()),
            transcript::<Gfx11Queued>(3, headless, Filter::default()),
            "gfx11 round {round} without its header"
        );
    }
    assert!(
        without_waves < 500,
        "{without_waves} of 2000 transcripts without waves"
    );
}

#[test]
fn runs_of_a_kind_decode_as_token_by_token() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut empty = 0;
    for round in 0..2000 {
        let mut gfx12 = random_stream(&mut rng, &gfx12::ARCH, 4, 20 + round % 300, 60, 0);
        // Half the streams end in a run of REG tokens and realtime samples, which are merged
        // only in the fast loop: where a run ends decides which loop takes what follows.
        if round % 2 == 0 {
            let mut ending = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let write = RegWrite {
                    me: 0,
                    pipe: 0,
                    compute: true,
                    address: rng.below(0x100),
                    data: rng.next_u64() as u32,
                };
                ending.push((write.encode(), 64));
            }
            for _ in 0..2 {
                ending.push((0x81 | (1 + rng.below(50)) << 12, 64));
            }
            let tail = rng.below(40) as usize;
            gfx12 = append(&gfx12, &ending, tail);
        }
        let stepped = transcript::<Gfx12Stepped>(4, &gfx12, Filter::default());
        // A short random stream may hold no record at all; most must.
        empty += usize::from(stepped.is_empty());
        assert_eq!(
            transcript::<Gfx12>(4, &gfx12, Filter::default()),
            stepped,
            "round {round}"
        );
    }
    assert!(empty < 100, "{empty} of 2000 streams decoded to nothing");
}

/// `data` followed by the tokens `(raw, bits)` and `tail` zero nibbles.
fn append(data: &[u8], tokens: &[(u64, usize)], tail: usize) -> Vec<u8> {
    let mut nibbles: Vec<u8> = data.iter().flat_map(|b| [b & 0xF, b >> 4]).collect();
    for &(raw, bits) in tokens {
        nibbles.extend((0..bits / 4).map(|i| (raw >> (4 * i)) as u8 & 0xF));
    }
    nibbles.extend(std::iter::repeat_n(0, tail));
    nibbles
        .chunks(2)
        .map(|pair| pair[0] | pair.get(1).copied().unwrap_or(0) << 4)
        .collect()
}

//! The fast paths place every record as the reference walk does: random code (every kind of line
//! the line facts tell apart), random records (mostly following the code, as a trace does),
//! random pinned PCs and rules; the same waves stitched with and without the fast paths, over
//! parse calls whose answers change, must agree on every record, every token-less barrier and
//! every ISA question.

use std::collections::HashMap;

use super::super::line::{Line, TextFacts};
use super::*;
use crate::isa::classify::TextClass;
use crate::testing::Rng;

/// Line texts, one of each kind the walk's rules tell apart.
const TEXTS: &[&str] = &[
    "s_load_b64 s[0:1], s[0:1], 0x0",
    "s_buffer_load_dword s4, s[8:11], 0x10",
    "s_mov_b32 s0, 0",
    "s_add_u32 s0, s0, 1",
    "s_setpc_b64 s[0:1]",
    "v_add_f32 v0, v1, v2",
    "v_nop",
    "v_mov_b64 v[0:1], v[2:3]",
    "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19]",
    "global_store_b32 v0, v1, s[0:1]",
    "global_load_b32 v0, v1, s[0:1]",
    "buffer_store_dword v1, off, s[0:3], 0",
    "scratch_load_b32 v0, off, s0",
    "scratch_store_b32 off, v0, s0",
    "flat_store_b32 v[0:1], v2",
    "flat_load_b32 v0, v[0:1]",
    "ds_add_u32 v0, v48",
    "ds_load_b32 v32, v0",
    "ds_bvh_stack_push4_pop1_rtn_b32 v32, v0, v48, v[64:67]",
    "image_bvh_intersect_ray v[0:3], v[4:15], s[0:3]",
    "s_nop 0",
    "s_waitcnt vmcnt(0)",
    "s_waitcnt lgkmcnt(0)",
    "s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)",
    "s_barrier",
    "s_barrier_signal -1",
    "s_barrier_wait 0xffff",
    "s_endpgm",
    "s_delay_alu instid0(VALU_DEP_1)",
    "s_wait_alu 0xfffd",
    "exp mrt0 v0, v0, v0, v0",
    "",
    "s_cbranch_execz label",
];

/// ISA answers by address; counts the questions.
#[derive(Clone, Debug)]
struct Code {
    lines: HashMap<u64, (u64, String)>,
    /// Addresses in order.
    order: Vec<u64>,
    asked: usize,
}

impl IsaProvider for Code {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        self.asked += 1;
        let (size, t) = self
            .lines
            .get(&pc.address)
            .ok_or(IsaError::UnknownAddress)?;
        text.clear();
        text.extend_from_slice(t.as_bytes());
        Ok(*size)
    }
}

/// A branch from `from` to `to` as the disassembler prints it (SIMM16 words after `from + 4`;
/// negative ones either folded or signed).
fn branch_text(rng: &mut Rng, from: u64, to: u64) -> String {
    let words = (to as i64 - from as i64 - 4) / 4;
    let offset = if words < 0 && rng.chance(70) {
        (words + 65536).to_string()
    } else {
        words.to_string()
    };
    let mnemonic = ["s_branch", "s_cbranch_scc0", "s_cbranch_vccnz"][rng.below(3)];
    format!("{mnemonic} {offset}")
}

/// The lines most code is made of.
const COMMON: &[&str] = &[
    "v_add_f32 v0, v1, v2",
    "v_nop",
    "s_mov_b32 s0, 0",
    "s_add_u32 s0, s0, 1",
    "s_load_b64 s[0:1], s[0:1], 0x0",
    "global_store_b32 v0, v1, s[0:1]",
    "ds_add_u32 v0, v48",
    "s_nop 0",
    "s_delay_alu instid0(VALU_DEP_1)",
    "buffer_store_dword v1, off, s[0:3], 0",
];

fn random_text(rng: &mut Rng) -> String {
    let texts = if rng.chance(60) { COMMON } else { TEXTS };
    texts[rng.below(texts.len())].to_string()
}

fn random_code(rng: &mut Rng) -> Code {
    let base: u64 = if rng.chance(10) { 0 } else { 0x100 };
    let count = 1 + rng.below(40);
    let mut order = Vec::with_capacity(count);
    let mut address = base;
    for _ in 0..count {
        order.push(address);
        address += if rng.chance(15) { 8 } else { 4 };
    }
    let mut lines = HashMap::new();
    for (k, &at) in order.iter().enumerate() {
        let size = match order.get(k + 1) {
            // A size other than the distance to the next line, or 0, now and then.
            Some(&next) if !rng.chance(3) => next - at,
            _ => [0, 4, 8][rng.below(3)],
        };
        let text = if rng.chance(12) {
            // Mostly a loop back a few lines, else forward, now and then to an address without
            // a line.
            let to = match rng.below(10) {
                0 => at.wrapping_add(4 * rng.below(16) as u64).wrapping_sub(30),
                1..=3 => order[k + rng.below(order.len() - k)],
                _ => order[k.saturating_sub(rng.below(10))],
            };
            branch_text(rng, at, to)
        } else {
            random_text(rng)
        };
        lines.insert(at, (size, text));
    }
    Code {
        lines,
        order,
        asked: 0,
    }
}

/// The category a record at a line of this text would have, if the record follows the code.
fn category_for(rng: &mut Rng, facts: &TextFacts, jump: bool) -> Category {
    use Category as C;
    match facts.class {
        TextClass::Smem => C::Smem,
        TextClass::Salu => C::Salu,
        TextClass::Vmem if rng.chance(20) => C::Flat,
        TextClass::Vmem => C::Vmem,
        TextClass::Flat => C::Flat,
        TextClass::Lds => C::Lds,
        TextClass::Valu => C::Valu,
        TextClass::Immed if rng.chance(20) => C::Message,
        TextClass::Immed => C::Immed,
        TextClass::Bvh => C::Bvh,
        TextClass::Branch if jump => C::Jump,
        TextClass::Branch => C::Next,
        TextClass::Skip | TextClass::DontKnow => C::None,
    }
}

/// A wave's records: the categories of a walk over the code from its first line (branches
/// taken or not at random) until it leaves the code, in some waves with records put in or left
/// out now and then (random categories, raw bytes past the ABI's included).
fn random_records(rng: &mut Rng, code: &Code) -> Vec<Inst> {
    let most = 1 + rng.below(200);
    let deviations = [0, 0, 2, 10][rng.below(4)];
    let mut at = code.order.first().copied();
    let mut categories = Vec::with_capacity(most);
    let mut lines_walked = 0;
    while categories.len() < most && lines_walked < 4 * most {
        if rng.chance(deviations) {
            categories.push(match rng.below(20) {
                0 => 200,
                _ => Category::ALL[rng.below(Category::ALL.len())] as u8,
            });
            if rng.chance(50) {
                continue;
            }
        }
        let Some((pc, (size, text))) = at.and_then(|pc| Some((pc, code.lines.get(&pc)?))) else {
            break;
        };
        lines_walked += 1;
        let facts = TextFacts::of(text.as_bytes());
        let jump = rng.chance(40);
        let size = if *size == 0 { 4 } else { *size };
        at = Some(pc.wrapping_add(size));
        if jump && facts.class == TextClass::Branch {
            let line = Line::new(facts, size, &StitchRules::default());
            at = line.branch_target(Pc::new(pc, 0)).map(|t| t.address);
        }
        let mut category = category_for(rng, &facts, jump);
        if matches!(
            facts.class,
            TextClass::Vmem | TextClass::Flat | TextClass::Lds | TextClass::Valu
        ) && rng.chance(6)
        {
            // An IMMED record the line absorbs under the RDNA rules, before its own.
            categories.push(Category::Immed as u8);
        } else if text.starts_with("s_waitcnt") && rng.chance(25) {
            // A record of another kind, which the line takes where it cancels an absorption.
            category = Category::Valu;
        }
        if category != Category::None && !rng.chance(deviations) {
            categories.push(category as u8);
        }
    }
    if categories.is_empty() {
        categories.push(Category::Valu as u8);
    }
    let mut time = rng.below(50) as i64;
    let mut inst = |category| {
        let duration: i32 = 1 + rng.below(12);
        let stall = rng.below(6) as u32;
        time += rng.below(10) as i64;
        Inst::new(category, stall, duration, time, Pc::NONE)
    };
    categories.into_iter().map(&mut inst).collect()
}

/// PCs the trace pins: mostly the first line at record 0, then a few more, some at addresses
/// the code does not have, some not yet arrived.
fn random_slots(rng: &mut Rng, code: &Code, records: usize) -> Vec<PcSlot> {
    let mut slots = Vec::new();
    let mut index = 0;
    if rng.chance(85) {
        let pc = Pc::new(code.order[0], 0);
        slots.push(PcSlot {
            index,
            pc: Some(pc),
        });
    }
    while rng.chance(30) {
        index += 1 + rng.below(records);
        let pc = match rng.below(10) {
            0 => None,
            1 => Some(Pc::new(0xdead_0000, 0)),
            _ => Some(Pc::new(code.order[rng.below(code.order.len())], 0)),
        };
        slots.push(PcSlot { index, pc });
    }
    slots
}

fn random_rules(rng: &mut Rng) -> StitchRules {
    match rng.below(6) {
        0 => StitchRules::rdna(false),
        1 => StitchRules::rdna(true),
        2 => StitchRules {
            find_tokenless_barrier_waits: true,
            ..StitchRules::rdna(true)
        },
        3 => StitchRules::GFX9,
        // Any mixture: the fast paths may not rely on which rules go together.
        _ => StitchRules {
            v_mov_b64_issues_twice: rng.chance(50),
            first_record_at_null_pc: rng.chance(50),
            find_tokenless_barrier_waits: rng.chance(50),
            tokenless_marks_hold: rng.chance(50),
            absorb_immediates: rng.chance(50),
            barrier_takes_message_and_immed: rng.chance(50),
            mfma_scale_loads_early: rng.chance(50),
            swap_overtaken_records: rng.chance(50),
        },
    }
}

/// A new answer for one line of the code, as between two parse calls.
fn change_a_line(rng: &mut Rng, code: &mut Code) {
    let at = code.order[rng.below(code.order.len())];
    let text = random_text(rng);
    if let Some(line) = code.lines.get_mut(&at) {
        if rng.chance(50) {
            line.1 = text;
        } else {
            line.0 = [0, 4, 8, 12][rng.below(4)];
        }
    }
}

#[test]
fn fast_paths_place_every_record_as_the_reference_walk_does() {
    let mut rng = Rng(0x5717_c4ed);
    let (mut waves, mut placed, mut total) = (0, 0, 0);
    for program in 0..5000 {
        let mut fast_code = random_code(&mut rng);
        let mut reference_code = fast_code.clone();
        let mut fast = SharedStitch::default();
        let mut reference = SharedStitch::default();
        for call in 0..1 + rng.below(3) {
            let mut rules = random_rules(&mut rng);
            for wave in 0..1 + rng.below(5) {
                if rng.chance(10) {
                    // Another SE buffer's header.
                    rules.find_tokenless_barrier_waits ^= true;
                } else if rng.chance(5) {
                    rules = random_rules(&mut rng);
                }
                let insts = random_records(&mut rng, &fast_code);
                let slots = random_slots(&mut rng, &fast_code, insts.len());
                let begin = insts[0].time - rng.below(8) as i64;
                let span = WaveSpan {
                    begin,
                    end: insts[insts.len() - 1].time + rng.below(30) as i64,
                };
                let (mut by_fast, mut by_reference) = (insts.clone(), insts.clone());
                let (mut fast_excluded, mut reference_excluded) = (Vec::new(), Vec::new());
                let fast_count = fast.stitch(
                    &mut fast_code,
                    &mut by_fast,
                    &slots,
                    &rules,
                    span,
                    &mut fast_excluded,
                );
                let reference_count = reference.stitch_by_reference(
                    &mut reference_code,
                    &mut by_reference,
                    &slots,
                    &rules,
                    span,
                    &mut reference_excluded,
                );
                let case = || {
                    let mut lines: Vec<_> = reference_code.lines.iter().collect();
                    lines.sort();
                    format!(
                        "program {program} call {call} wave {wave}\nrules {rules:?}\n\
                         slots {slots:?}\nlines {lines:?}\nrecords {insts:?}"
                    )
                };
                for (k, (f, r)) in by_fast.iter().zip(&by_reference).enumerate() {
                    assert_eq!(f, r, "record {k}\n{}", case());
                }
                assert_eq!(fast_count, reference_count, "{}", case());
                assert_eq!(fast_excluded, reference_excluded, "{}", case());
                assert_eq!(fast_code.asked, reference_code.asked, "{}", case());
                waves += 1;
                placed += by_fast.iter().filter(|i| i.pc != Pc::NONE).count();
                total += insts.len();
            }
            fast.recycle();
            reference.recycle();
            if rng.chance(50) {
                change_a_line(&mut rng, &mut fast_code);
                reference_code.lines = fast_code.lines.clone();
            }
        }
    }
    // Not vacuous: the walks place a good part of the records.
    let counts = format!("{waves} waves, {placed} of {total} records placed");
    assert!(waves > 20_000 && placed * 3 > total, "{counts}");
}

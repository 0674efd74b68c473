mod fast_paths;

use super::cache::NO_LINE;
use super::line::{parse_branch_offset, TEXT_CLASSES};
use super::*;
use crate::isa::{IsaError, IsaProvider};
use crate::records::{Category, Inst, Pc};
use crate::spare::Recycle;
use crate::testing::Listing;
use crate::wave::PcSlot;

fn records(categories: &[Category]) -> Vec<Inst> {
    categories
        .iter()
        .map(|&c| Inst::new(c as u8, 0, 1, 0, Pc::NONE))
        .collect()
}

fn run(listing: &mut Listing, insts: &mut [Inst], rules: StitchRules) -> (usize, Vec<(usize, Pc)>) {
    run_in(&mut SharedStitch::default(), listing, insts, rules)
}

/// [`run`] in the cache `shared`, as a later wave of the same thread.
fn run_in(
    shared: &mut SharedStitch,
    listing: &mut Listing,
    insts: &mut [Inst],
    rules: StitchRules,
) -> (usize, Vec<(usize, Pc)>) {
    let mut excluded = Vec::new();
    let slots = [PcSlot {
        index: 0,
        pc: Some(Pc::new(0x100, 0)),
    }];
    let n = shared.stitch(
        listing,
        insts,
        &slots,
        &rules,
        WaveSpan::default(),
        &mut excluded,
    );
    (n, excluded)
}

fn pcs(insts: &[Inst]) -> Vec<u64> {
    insts.iter().map(|i| i.pc.address).collect()
}

const RDNA: StitchRules = StitchRules::rdna(false);

#[test]
fn follows_the_code_skipping_tokenless_lines() {
    use Category as C;
    let mut isa = Listing(
        vec![
            (0x100, 4, "s_load_b64 s[0:1], s[0:1], 0x0"),
            (0x104, 4, "s_delay_alu instid0(VALU_DEP_1)"),
            (0x108, 8, "v_add_f32 v0, v1, v2"),
            (0x110, 4, "s_waitcnt vmcnt(0)"),
            (0x114, 4, "s_cbranch_scc0 65534"),
            (0x118, 0, "s_endpgm"),
        ],
        0,
    );
    let mut insts = records(&[
        C::Smem,
        C::Valu,
        C::Immed,
        C::Jump,
        C::Immed,
        C::Next,
        C::Message,
    ]);
    let (n, _) = run(&mut isa, &mut insts, RDNA);
    assert_eq!(n, 7);
    // The taken branch (offset -2) goes back to 0x110 once, then falls through.
    assert_eq!(
        pcs(&insts),
        [0x100, 0x108, 0x110, 0x114, 0x110, 0x114, 0x118]
    );
}

#[test]
fn waves_over_linked_lines_are_placed_as_the_first() {
    use Category as C;
    // The first wave links the lines; the next ones take them in the tight loop (token-less
    // lines stepped over, misses, a v_mfma_scale line).
    let cases = [
        (
            vec![
                (0x100, 4, "s_load_b64 s[0:1], s[0:1], 0x0"),
                (0x104, 4, "s_delay_alu instid0(VALU_DEP_1)"),
                (0x108, 8, "v_add_f32 v0, v1, v2"),
                (0x110, 4, "s_nop 0"),
                (0x114, 4, "s_mov_b32 s0, 0"),
                (0x118, 4, "v_add_f32 v0, v1, v2"),
                (0x11c, 0, "s_endpgm"),
            ],
            vec![C::Smem, C::Valu, C::Valu, C::Message],
            RDNA,
        ),
        (
            vec![
                (
                    0x100,
                    4,
                    "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19]",
                ),
                (0x104, 4, "v_add_f32 v0, v1, v2"),
                (
                    0x108,
                    4,
                    "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19]",
                ),
                (0x10c, 4, "s_endpgm"),
            ],
            vec![C::Valu, C::Valu, C::Valu, C::Message],
            GFX9,
        ),
    ];
    for (lines, categories, rules) in cases {
        let slots = [PcSlot {
            index: 0,
            pc: Some(Pc::new(0x100, 0)),
        }];
        let mut shared = SharedStitch::default();
        let mut isa = Listing(lines, 0);
        let mut waves = (0..3).map(|k| {
            let mut insts = records(&categories);
            for (j, inst) in insts.iter_mut().enumerate() {
                inst.time = 10 * j as i64 + k;
            }
            let span = WaveSpan { begin: 0, end: 100 };
            let n = shared.stitch(&mut isa, &mut insts, &slots, &rules, span, &mut Vec::new());
            (
                n,
                insts
                    .iter()
                    .map(|i| (i.pc, i.time, i.duration))
                    .collect::<Vec<_>>(),
            )
        });
        let first = waves.next().unwrap();
        assert_eq!(first.0, categories.len());
        for (k, wave) in waves.enumerate() {
            let shifted = first.1.iter().map(|&(pc, t, d)| (pc, t + k as i64 + 1, d));
            assert_eq!(wave.0, first.0);
            assert_eq!(wave.1, shifted.collect::<Vec<_>>());
        }
    }
}

#[test]
fn a_kernel_entry_is_linked_to_the_next_line_once_a_wave_asked_for_it() {
    use Category as C;
    // The entry's record is placed at its pinned PC, where no look-ahead links lines: the
    // second wave of a call links the entry to the line the first asked for (without a
    // query), so that later waves take their second record by the fast paths.
    let lines = vec![
        (0x100, 4, "s_load_b64 s[0:1], s[0:1], 0x0"),
        (0x104, 4, "v_add_f32 v0, v1, v2"),
        (0x108, 4, "s_endpgm"),
        (0x10c, 4, "s_code_end"),
    ];
    let categories = [C::Smem, C::Valu, C::Message];
    let mut shared = SharedStitch::default();
    let mut isa = Listing(lines, 0);
    let mut first = records(&categories);
    assert_eq!(run_in(&mut shared, &mut isa, &mut first, RDNA).0, 3);
    let entry = shared.ids[&Pc::new(0x100, 0)] as usize;
    let after_entry = shared.ids[&Pc::new(0x104, 0)];
    assert_eq!(
        shared.links[entry].next, NO_LINE,
        "the first wave asks for the line"
    );
    let asked = isa.1;
    for _ in 0..2 {
        let mut insts = records(&categories);
        assert_eq!(run_in(&mut shared, &mut isa, &mut insts, RDNA).0, 3);
        assert_eq!(shared.links[entry].next, after_entry);
        assert_eq!(pcs(&insts), pcs(&first));
    }
    assert_eq!(isa.1, asked, "no query in the later waves of the call");
    // A new call asks for every line again, the entry's link only a hint until then.
    shared.recycle();
    let mut insts = records(&categories);
    assert_eq!(run_in(&mut shared, &mut isa, &mut insts, RDNA).0, 3);
    assert_eq!(isa.1, 2 * asked);
    assert_eq!(pcs(&insts), pcs(&first));
}

#[test]
fn a_loop_taken_again_follows_the_known_target() {
    use Category as C;
    // A three-line loop body taken three times, then the fall-through: from the second
    // time on, the tight loop takes the branch to the line it already knows.
    let lines = vec![
        (0x100, 4, "s_mov_b32 s0, 0"),
        (0x104, 4, "v_add_f32 v0, v1, v2"),
        (0x108, 4, "s_delay_alu instid0(VALU_DEP_1)"),
        (0x10c, 4, "v_add_f32 v0, v1, v2"),
        (0x110, 4, "s_cbranch_scc0 65532"),
        (0x114, 4, "s_endpgm"),
    ];
    let body = [C::Valu, C::Valu, C::Jump];
    let mut categories = vec![C::Salu];
    for _ in 0..3 {
        categories.extend(body);
    }
    categories.extend([C::Valu, C::Valu, C::Next, C::Message]);
    let mut expected = vec![0x100];
    for _ in 0..4 {
        expected.extend([0x104, 0x10c, 0x110]);
    }
    expected.push(0x114);
    let mut shared = SharedStitch::default();
    let mut isa = Listing(lines, 0);
    for _ in 0..2 {
        let mut insts = records(&categories);
        let (n, _) = run_in(&mut shared, &mut isa, &mut insts, RDNA);
        assert_eq!(n, categories.len());
        assert_eq!(pcs(&insts), expected);
    }
    // Each line once, and the unknown address after s_endpgm once a wave.
    assert_eq!(isa.1, 8);
}

const GFX9: StitchRules = StitchRules::GFX9;

fn categories(insts: &[Inst]) -> Vec<u8> {
    insts.iter().map(Inst::category).collect()
}

#[test]
fn gfx9_swaps_two_records_only_for_their_lines_very_classes() {
    use Category as C;
    let code = |memory: &'static str| {
        Listing(
            vec![
                (0x100, 4, "s_mov_b32 s0, 0"),
                (0x104, 4, memory),
                (0x108, 4, "v_add_f32 v0, v1, v2"),
            ],
            0,
        )
    };
    // A VMEM record that overtook a VALU one is put back before it.
    let mut insts = records(&[C::Salu, C::Valu, C::Vmem]);
    run(
        &mut code("buffer_store_dword v1, off, s[0:3], 0"),
        &mut insts,
        GFX9,
    );
    let expected = [C::Salu as u8, C::Vmem as u8, C::Valu as u8];
    assert_eq!(categories(&insts), expected);
    assert_eq!(pcs(&insts), [0x100, 0x104, 0x108]);
    // A FLAT record matches a `global_*` line only plainly, never in the swap test.
    let mut insts = records(&[C::Salu, C::Valu, C::Flat]);
    run(
        &mut code("global_store_dword v[2:3], v1, off"),
        &mut insts,
        GFX9,
    );
    let expected = [C::Salu as u8, C::Valu as u8, C::Flat as u8];
    assert_eq!(categories(&insts), expected);
    assert_eq!(pcs(&insts), [0x100, 0x108, 0]);
}

#[test]
fn gfx9_swap_takes_an_s_barrier_line_for_an_immed_line() {
    use Category as C;
    // An immediate that overtook a VALU record before the barrier's line (the reference's
    // output on a damaged stream): the two are put back in line order.
    let mut isa = Listing(
        vec![
            (0x100, 4, "v_add_f32 v0, v1, v2"),
            (0x104, 4, "v_add_f32 v0, v1, v2"),
            (0x108, 4, "s_barrier"),
            (0x10c, 4, "v_add_f32 v0, v1, v2"),
        ],
        0,
    );
    let mut insts = records(&[C::Valu, C::Immed, C::Valu, C::Valu]);
    run(&mut isa, &mut insts, GFX9);
    let expected = [C::Valu as u8, C::Valu as u8, C::Immed as u8, C::Valu as u8];
    assert_eq!(categories(&insts), expected);
    assert_eq!(pcs(&insts), [0x100, 0x104, 0x108, 0x10c]);
}

#[test]
fn a_branch_line_met_by_another_category_stops_the_walk() {
    use Category as C;
    let mut isa = Listing(
        vec![
            (0x100, 4, "s_mov_b32 s0, 0"),
            (0x104, 4, "s_branch 3"),
            (0x108, 4, "v_nop"),
        ],
        0,
    );
    let mut insts = records(&[C::Salu, C::Valu, C::Valu]);
    let (n, _) = run(&mut isa, &mut insts, RDNA);
    assert_eq!(n, 1);
    assert_eq!(pcs(&insts), [0x100, 0, 0]);
}

#[test]
fn immediates_are_absorbed_by_memory_lines_but_not_by_smem() {
    use Category as C;
    let lines = vec![
        (0x100, 4, "v_nop"),
        (0x104, 4, "s_prefetch_data s[0:1]"),
        (0x108, 4, "s_mov_b32 s0, 0"),
        (0x10c, 4, "global_store_b32 v0, v1, s[0:1]"),
    ];
    let mut insts = records(&[C::Valu, C::Immed]);
    let (n, _) = run(&mut Listing(lines, 0), &mut insts, RDNA);
    assert_eq!(n, 2);
    assert_eq!(pcs(&insts), [0x100, 0x10c]);
}

#[test]
fn a_waitcnt_line_after_an_absorption_takes_the_next_record() {
    use Category as C;
    // The IMMED record is absorbed by the second VALU line; the s_waitcnt line then cancels
    // that absorption and takes the SALU record; the VMEM record goes on from there.
    let lines = vec![
        (0x100, 4, "v_nop"),
        (0x104, 4, "v_nop"),
        (0x108, 4, "s_waitcnt lgkmcnt(0)"),
        (0x10c, 4, "v_nop"),
        (0x110, 4, "s_mov_b32 s0, 0"),
        (0x114, 4, "global_load_b32 v0, v1, s[0:1]"),
    ];
    let mut insts = records(&[C::Valu, C::Immed, C::Salu, C::Vmem]);
    let (n, _) = run(&mut Listing(lines, 0), &mut insts, RDNA);
    assert_eq!(n, 4);
    assert_eq!(pcs(&insts), [0x100, 0x104, 0x108, 0x114]);
}

#[test]
fn a_record_misses_fewer_lines_than_the_failure_limit_also_over_linked_lines() {
    use Category as C;
    // The VMEM record misses every SALU line before its own: one miss short of the limit it is
    // placed, at the limit the walk ends; the later waves of the call take the same lines in
    // the run over linked lines, and the next call's first wave in the renewal of the lines
    // along the earlier call's links: each must count the misses as the first wave did.
    for salu_lines in [MAX_FAILURES - 1, MAX_FAILURES] {
        let mut lines = vec![(0x100, 4, "v_nop")];
        let mut address = 0x104;
        for _ in 0..salu_lines {
            lines.push((address, 4, "s_mov_b32 s0, 0"));
            address += 4;
        }
        lines.push((address, 4, "global_store_b32 v0, v1, s[0:1]"));
        let mut isa = Listing(lines, 0);
        let mut shared = SharedStitch::default();
        for call in 0..2 {
            for wave in 0..3 {
                let mut insts = records(&[C::Valu, C::Vmem]);
                let (n, _) = run_in(&mut shared, &mut isa, &mut insts, RDNA);
                let expected = if salu_lines < MAX_FAILURES {
                    [0x100, address]
                } else {
                    [0x100, 0]
                };
                let case = format!("{salu_lines} lines, call {call}, wave {wave}");
                assert_eq!(pcs(&insts), expected, "{case}");
                assert_eq!(n, if salu_lines < MAX_FAILURES { 2 } else { 1 }, "{case}");
            }
            shared.recycle();
        }
    }
}

#[test]
fn failures_count_from_the_last_record_placed() {
    use Category as C;
    // Two VMEM records, each after more than half the failure limit of SALU lines: together
    // their misses pass the limit, but each record's count starts at its own. So in the first
    // walk over the lines, over linked lines, and in the next call's renewal along the links.
    let half = MAX_FAILURES / 2 + 10;
    let mut lines = vec![(0x100, 4, "v_nop")];
    let mut address = 0x104;
    let mut stores = Vec::new();
    for _ in 0..2 {
        for _ in 0..half {
            lines.push((address, 4, "s_mov_b32 s0, 0"));
            address += 4;
        }
        lines.push((address, 4, "global_store_b32 v0, v1, s[0:1]"));
        stores.push(address);
        address += 4;
    }
    let mut isa = Listing(lines, 0);
    let mut shared = SharedStitch::default();
    for call in 0..2 {
        for wave in 0..2 {
            let mut insts = records(&[C::Valu, C::Vmem, C::Vmem]);
            let (n, _) = run_in(&mut shared, &mut isa, &mut insts, RDNA);
            let case = format!("call {call}, wave {wave}");
            assert_eq!(pcs(&insts), [0x100, stores[0], stores[1]], "{case}");
            assert_eq!(n, 3, "{case}");
        }
        shared.recycle();
    }
}

#[test]
fn absorptions_are_counted_alike_over_linked_lines() {
    use Category as C;
    // After the wave's first record, two IMMED records absorbed by VALU lines, then two
    // s_waitcnt lines that each cancel one and take a SALU record; a third s_waitcnt line finds
    // none open and ends the walk. Later waves of the call take the lines in the run over
    // linked lines.
    let lines = vec![
        (0x100, 4, "v_nop"),
        (0x104, 4, "v_nop"),
        (0x108, 4, "v_nop"),
        (0x10c, 4, "s_waitcnt lgkmcnt(0)"),
        (0x110, 4, "s_waitcnt vmcnt(0)"),
        (0x114, 4, "s_waitcnt vmcnt(1)"),
        (0x118, 4, "v_nop"),
    ];
    let mut isa = Listing(lines, 0);
    let mut shared = SharedStitch::default();
    for wave in 0..3 {
        let mut insts = records(&[
            C::Valu,
            C::Immed,
            C::Immed,
            C::Salu,
            C::Salu,
            C::Salu,
            C::Valu,
        ]);
        let (n, _) = run_in(&mut shared, &mut isa, &mut insts, RDNA);
        assert_eq!(n, 5, "wave {wave}");
        assert_eq!(
            pcs(&insts),
            [0x100, 0x104, 0x108, 0x10c, 0x110, 0, 0],
            "wave {wave}"
        );
    }
}

#[test]
fn unmatched_load_or_waitcnt_lines_stop_the_walk() {
    use Category as C;
    let lines = vec![
        (0x100, 4, "v_nop"),
        (0x104, 4, "global_load_b32 v0, v1, s[0:1]"),
        (0x108, 4, "v_nop"),
    ];
    let mut insts = records(&[C::Valu, C::Valu]);
    assert_eq!(run(&mut Listing(lines, 0), &mut insts, RDNA).0, 1);
    let lines = vec![
        (0x100, 4, "v_nop"),
        (0x104, 4, "scratch_load_b32 v0, off, s0"),
        (0x108, 4, "v_nop"),
    ];
    let mut insts = records(&[C::Valu, C::Valu]);
    assert_eq!(
        run(&mut Listing(lines, 0), &mut insts, RDNA).0,
        2,
        "scratch_ loads are only skipped"
    );
}

/// gfx12 with header bit 59.
const BARRIER_RULES: StitchRules = StitchRules {
    find_tokenless_barrier_waits: true,
    ..StitchRules::rdna(true)
};

/// One wave stitched from 0x100 with a cache shared with other waves.
fn run_shared(
    shared: &mut SharedStitch,
    listing: &mut Listing,
    insts: &mut [Inst],
) -> Vec<(usize, Pc)> {
    let mut excluded = Vec::new();
    let slots = [PcSlot {
        index: 0,
        pc: Some(Pc::new(0x100, 0)),
    }];
    shared.stitch(
        listing,
        insts,
        &slots,
        &BARRIER_RULES,
        WaveSpan::default(),
        &mut excluded,
    );
    excluded
}

#[test]
fn gfx12_ds_bvh_lines_are_lds_lines_a_bvh_record_does_not_take() {
    use Category as C;
    let gfx12 = StitchRules::rdna(true);
    let lines = || {
        vec![
            (0x100, 4, "v_nop"),
            (
                0x104,
                8,
                "ds_bvh_stack_push4_pop1_rtn_b32 v32, v0, v48, v[64:67]",
            ),
            (0x10c, 8, "ds_add_u32 v0, v48"),
            (0x114, 8, "ds_load_b32 v32, v0"),
            (0x11c, 4, "v_nop"),
        ]
    };
    // The BVH record meets LDS lines it does not match, then the unmatched `_load_` line
    // ends the walk: it and every later record keep no PC.
    let mut insts = records(&[C::Valu, C::Bvh, C::Lds, C::Valu]);
    let (n, _) = run(&mut Listing(lines(), 0), &mut insts, gfx12);
    assert_eq!(n, 1);
    assert_eq!(pcs(&insts), [0x100, 0, 0, 0]);
    // An LDS record takes the `ds_bvh` line.
    let mut insts = records(&[C::Valu, C::Lds, C::Lds, C::Lds, C::Valu]);
    let (n, _) = run(&mut Listing(lines(), 0), &mut insts, gfx12);
    assert_eq!(n, 5);
    assert_eq!(pcs(&insts), [0x100, 0x104, 0x10c, 0x114, 0x11c]);
}

#[test]
fn a_record_other_than_immed_at_a_barrier_wait_means_it_had_no_token() {
    use Category as C;
    let lines = vec![
        (0x100, 4, "s_barrier_signal -1"),
        (0x104, 4, "s_barrier_wait 0xffff"),
        (0x108, 4, "s_barrier_wait 0xffff"),
        (0x10c, 4, "v_nop"),
    ];
    let mut insts = records(&[C::Message, C::Valu]);
    let (n, excluded) = run(&mut Listing(lines, 0), &mut insts, BARRIER_RULES);
    assert_eq!(n, 2);
    assert_eq!(pcs(&insts), [0x100, 0x10c]);
    // Both lines are token-less; the first is the record index's.
    assert_eq!(excluded, [(1, Pc::new(0x104, 0))]);
}

#[test]
fn an_immed_record_the_following_lines_do_not_take_is_the_barriers_own() {
    use Category as C;
    // The look-ahead tests the IMMED record against the SMEM line: no match.
    let lines = vec![
        (0x100, 4, "s_barrier_signal -1"),
        (0x104, 4, "s_barrier_wait 0xffff"),
        (0x108, 4, "s_load_b32 s0, s[0:1], 0x0"),
        // The look-ahead moves past a line before testing it: the last line of the code
        // is never tested.
        (0x10c, 4, "s_endpgm"),
    ];
    let mut insts = records(&[C::Message, C::Immed, C::Smem]);
    let (_, excluded) = run(&mut Listing(lines, 0), &mut insts, BARRIER_RULES);
    assert_eq!(pcs(&insts), [0x100, 0x104, 0x108]);
    assert!(excluded.is_empty());
}

#[test]
fn the_barrier_look_ahead_moves_two_records_per_line() {
    use Category as C;
    let lines = vec![
        (0x100, 4, "s_barrier_signal -1"),
        (0x104, 4, "s_barrier_wait 0xffff"),
        (0x108, 4, "s_nop 0"),
        (0x10c, 4, "s_nop 0"),
        (0x110, 4, "s_add_u32 s0, s0, 1"),
    ];
    // Records 1 and 3 meet the two s_nop lines (IMMED: they match); record 2 (SALU) is
    // never tested. Token-less.
    let mut insts = records(&[C::Message, C::Immed, C::Salu, C::Immed]);
    let (_, excluded) = run(&mut Listing(lines.clone(), 0), &mut insts, BARRIER_RULES);
    assert_eq!(excluded, [(1, Pc::new(0x104, 0))]);
    // A token-less line moves on one record: the s_delay_alu line puts record 2 (SALU)
    // against the second s_nop, which fails: the IMMED record is the barrier's.
    let lines = vec![
        (0x100, 4, "s_barrier_signal -1"),
        (0x104, 4, "s_barrier_wait 0xffff"),
        (0x108, 4, "s_delay_alu instid0(VALU_DEP_1)"),
        (0x10c, 4, "s_nop 0"),
        (0x110, 4, "s_add_u32 s0, s0, 1"),
    ];
    let mut insts = records(&[C::Message, C::Immed, C::Salu, C::Immed]);
    let (_, excluded) = run(&mut Listing(lines, 0), &mut insts, BARRIER_RULES);
    assert!(excluded.is_empty());
    assert_eq!(insts[1].pc.address, 0x104);
}

#[test]
fn barrier_wait_marks_reach_the_later_waves_of_the_call() {
    use Category as C;
    let lines = vec![
        (0x100, 4, "s_barrier_signal -1"),
        (0x104, 4, "s_barrier_wait 0xffff"),
        (0x108, 4, "s_add_u32 s0, s0, 1"),
        (0x10c, 4, "s_nop 0"),
        (0x110, 4, "s_endpgm"),
    ];
    // A record placed at the line (the look-ahead's SALU line does not take the IMMED):
    // later waves no longer take it for token-less, even for a record other than IMMED,
    // which fails there and goes on.
    let mut shared = SharedStitch::default();
    let mut listing = Listing(lines.clone(), 0);
    let mut first = records(&[C::Message, C::Immed, C::Salu]);
    assert!(run_shared(&mut shared, &mut listing, &mut first).is_empty());
    assert_eq!(pcs(&first), [0x100, 0x104, 0x108]);
    let mut second = records(&[C::Message, C::Salu]);
    assert!(run_shared(&mut shared, &mut listing, &mut second).is_empty());
    assert_eq!(pcs(&second), [0x100, 0x108]);
    // A line taken for token-less matches nothing for later waves: their IMMED record,
    // which the look-ahead gives to the barrier, is passed on to the s_nop.
    let mut shared = SharedStitch::default();
    let mut first = records(&[C::Message, C::Salu]);
    assert_eq!(
        run_shared(&mut shared, &mut listing, &mut first),
        [(1, Pc::new(0x104, 0))]
    );
    assert_eq!(pcs(&first), [0x100, 0x108]);
    let mut second = records(&[C::Message, C::Immed]);
    assert!(run_shared(&mut shared, &mut listing, &mut second).is_empty());
    assert_eq!(pcs(&second), [0x100, 0x10c]);
    // A new wave of another cache (another parse call) starts without marks.
    let mut third = records(&[C::Message, C::Immed]);
    let mut fresh = SharedStitch::default();
    assert!(run_shared(&mut fresh, &mut listing, &mut third).is_empty());
    assert_eq!(pcs(&third), [0x100, 0x104]);
}

#[test]
fn zero_sized_answers_are_not_cached() {
    use Category as C;
    let lines = vec![(0x100, 0, "s_endpgm")];
    let mut isa = Listing(lines, 0);
    let mut shared = SharedStitch::default();
    let slots = [PcSlot {
        index: 0,
        pc: Some(Pc::new(0x100, 0)),
    }];
    for _ in 0..2 {
        let mut insts = records(&[C::Message]);
        shared.stitch(
            &mut isa,
            &mut insts,
            &slots,
            &RDNA,
            WaveSpan::default(),
            &mut Vec::new(),
        );
    }
    assert_eq!(isa.1, 2, "each wave asks for the size-0 line again");
}

#[test]
fn every_call_asks_again_and_reads_a_changed_answer() {
    use Category as C;
    let slots = [PcSlot {
        index: 0,
        pc: Some(Pc::new(0x100, 0)),
    }];
    let stitch = |shared: &mut SharedStitch, isa: &mut Listing| {
        let mut insts = records(&[C::Valu, C::Valu, C::Message]);
        let args = (&slots[..], &RDNA, WaveSpan::default());
        let n = shared.stitch(isa, &mut insts, args.0, args.1, args.2, &mut Vec::new());
        (n, pcs(&insts))
    };
    let listing = |first: &'static str| {
        let lines = vec![
            (0x100, 4, first),
            (0x104, 4, "v_add_f32 v3, v4, v5"),
            (0x108, 4, "v_add_f32 v6, v7, v8"),
            (0x10c, 4, "s_endpgm"),
        ];
        Listing(lines, 0)
    };

    let mut isa = listing("v_add_f32 v0, v1, v2");
    let mut shared = SharedStitch::for_new_call();
    let before = stitch(&mut shared, &mut isa);
    shared.recycle();

    // The next call on the thread gets answers that changed: it asks again and reads them,
    // as a cache that never saw the old ones does.
    let mut changed = listing("s_delay_alu instid0(VALU_DEP_1)");
    let mut shared = SharedStitch::for_new_call();
    let after = stitch(&mut shared, &mut changed);
    shared.recycle();
    let mut fresh = listing("s_delay_alu instid0(VALU_DEP_1)");
    assert_eq!(after, stitch(&mut SharedStitch::default(), &mut fresh));
    assert_eq!(changed.1, fresh.1, "as many questions");
    assert_ne!(after, before);
}

#[test]
fn a_changed_size_moves_the_following_line() {
    use Category as C;
    let slots = [PcSlot {
        index: 0,
        pc: Some(Pc::new(0x100, 0)),
    }];
    let stitch = |shared: &mut SharedStitch, isa: &mut Listing| {
        let mut insts = records(&[C::Valu, C::Salu, C::Message]);
        let args = (&slots[..], &RDNA, WaveSpan::default());
        let n = shared.stitch(isa, &mut insts, args.0, args.1, args.2, &mut Vec::new());
        (n, pcs(&insts))
    };
    let listing = |size: u64| {
        let lines = vec![
            (0x100, size, "v_add_f32 v0, v1, v2"),
            (0x104, 4, "v_add_f32 v3, v4, v5"),
            (0x108, 4, "s_mov_b32 s0, 0"),
            (0x10c, 4, "s_endpgm"),
        ];
        Listing(lines, 0)
    };
    let mut shared = SharedStitch::for_new_call();
    stitch(&mut shared, &mut listing(4));
    shared.recycle();
    // The line that followed 0x100 is no longer the one after it.
    let mut changed = listing(8);
    let after = stitch(&mut shared, &mut changed);
    let mut fresh = listing(8);
    assert_eq!(after, stitch(&mut SharedStitch::default(), &mut fresh));
    assert_eq!(after, (3, vec![0x100, 0x108, 0x10c]));
    assert_eq!(changed.1, fresh.1, "as many questions");
}

#[test]
fn text_classes_are_listed_in_numeric_order() {
    for (k, class) in TEXT_CLASSES.iter().enumerate() {
        assert_eq!(*class as usize, k);
    }
}

#[test]
fn branch_offsets_parse_like_stoi() {
    assert_eq!(parse_branch_offset(b"s_cbranch_execz 46"), Some(46));
    assert_eq!(parse_branch_offset(b"s_branch 65534"), Some(-2));
    assert_eq!(parse_branch_offset(b"s_branch 12abc"), Some(12));
    assert_eq!(parse_branch_offset(b"s_branch label"), None);
    assert_eq!(parse_branch_offset(b"s_branch 99999999999999999999"), None);
}

#[test]
fn a_threads_first_walk_makes_room_for_twice_its_records_in_lines() {
    use Category as C;
    let mut isa = Listing(
        vec![
            (0x100, 4, "s_load_b64 s[0:1], s[0:1], 0x0"),
            (0x104, 4, "v_add_f32 v0, v1, v2"),
            (0x108, 4, "s_endpgm"),
        ],
        0,
    );
    let mut shared = SharedStitch::default();
    assert_eq!(shared.lines.capacity(), 0);
    let mut insts = records(&[C::Smem, C::Valu, C::Immed]);
    let (n, _) = run_in(&mut shared, &mut isa, &mut insts, RDNA);
    assert_eq!(n, 3);
    assert!(shared.lines.capacity() >= 6 && shared.links.capacity() >= 6);
    // Later walks grow the buffers only as lines come.
    let capacity = shared.lines.capacity();
    let mut more = records(&[C::Smem, C::Valu, C::Immed].repeat(100));
    run_in(&mut shared, &mut isa, &mut more, RDNA);
    assert_eq!(shared.lines.capacity(), capacity);
}

//! Unit tests of the gfx9 wave timing model, token by token.

use super::*;

fn wave() -> Gfx9Wave {
    let mut w = Gfx9Wave::default();
    w.restart(WaveIdentity::default(), Pc::NONE, 100);
    w
}

fn rec(cat: Category, stall: i64, dur: i64, time: i64) -> Inst {
    rec_raw(cat as u8, stall, dur, time)
}

fn rec_raw(category: u8, stall: i64, dur: i64, time: i64) -> Inst {
    record(time, category, dur, stall)
}

#[test]
fn issued_instructions_are_classified_in_order() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 200);
    w.issue(ISSUE_INST, 204);
    w.inst(0, 208, &mut phase);
    w.inst(1, 208, &mut phase);
    assert_eq!(
        w.wave.insts,
        vec![
            rec(Category::Smem, 0, 4, 200),
            rec(Category::Salu, 0, 4, 204)
        ]
    );
    assert_eq!(
        w.wave.timeline,
        vec![WaveState {
            kind: WaveStateKind::Idle as i32,
            duration: 100
        }]
    );
}

#[test]
fn immediate_waits_from_the_previous_end() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 200);
    w.inst(5, 204, &mut phase);
    w.issue(ISSUE_IMMED, 928);
    // The VALU lasts 8 (phase 2); stall = duration = 4 + (t - its end) (ERRATA G6a).
    assert_eq!(w.wave.insts[1], rec(Category::Immed, 724, 724, 208));
    let kinds: Vec<_> = w
        .wave
        .timeline
        .iter()
        .map(|s| (s.kind, s.duration))
        .collect();
    assert_eq!(kinds, vec![(1, 100), (2, 8), (3, 724)]);
    w.complete(1000);
    assert_eq!(w.wave.end_time, 1000);
    assert_eq!(
        w.wave.timeline.last().map(|s| (s.kind, s.duration)),
        Some((2, 68))
    );
}

#[test]
fn stall_moves_the_instruction_back() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 200);
    w.inst(5, 204, &mut phase);
    w.issue(ISSUE_STALL, 204);
    w.issue(ISSUE_INST, 212);
    w.inst(5, 216, &mut phase);
    // Moved back to the stall start, but not before the previous end (208).
    assert_eq!(w.wave.insts[1], rec(Category::Valu, 4, 12, 208));
}

#[test]
fn barrier_message_becomes_one_immediate() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 200);
    w.inst(1, 204, &mut phase);
    w.issue(ISSUE_IMMED, 208);
    w.issue(ISSUE_INST, 212);
    w.inst(15, 216, &mut phase);
    assert_eq!(w.wave.insts.len(), 3);
    assert_eq!(w.wave.insts[2].category(), Category::Message as u8);
    w.issue(ISSUE_IMMED, 216);
    assert_eq!(w.wave.insts.len(), 3);
    assert_eq!(w.wave.insts[2], rec(Category::Immed, 8, 8, 212));
}

#[test]
fn a_message_that_a_new_instruction_follows_is_taken_back() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 200);
    w.inst(1, 204, &mut phase);
    w.issue(ISSUE_INST, 212);
    w.inst(15, 216, &mut phase);
    assert_eq!(w.wave.insts[1].category(), Category::Message as u8);
    // No immediate (an s_barrier's was lost, or an s_sendmsg): the next instruction's issue
    // takes the message back, its WAIT span too.
    w.issue(ISSUE_INST, 300);
    w.inst(1, 304, &mut phase);
    assert_eq!(w.wave.insts.len(), 2);
    assert_eq!(w.wave.insts[1].category(), Category::Salu as u8);
    assert_eq!(w.wave.insts[1].time, 300);
    w.complete(400);
    let kinds: Vec<_> = w
        .wave
        .timeline
        .iter()
        .map(|s| (s.kind, s.duration))
        .collect();
    assert_eq!(kinds, vec![(1, 100), (2, 200)]);
}

#[test]
fn endpgm_starts_at_the_previous_end() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 200);
    w.inst(4, 212, &mut phase);
    w.issue(ISSUE_INST, 500);
    w.inst(15, 500, &mut phase);
    // The FLAT ends at 216; the message spans from there to its own end (500 + 4).
    assert_eq!(w.wave.insts[1], rec(Category::Message, 0, 288, 216));
}

#[test]
fn unknown_types_drop_their_placeholder_and_later_indices_go_stale() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 200);
    w.issue(ISSUE_INST, 204);
    w.issue(ISSUE_INST, 208);
    w.inst(9, 212, &mut phase);
    // The second INST names index 1, now the third placeholder; the second stays unfinished.
    w.inst(1, 212, &mut phase);
    assert_eq!(
        w.wave.insts,
        vec![
            rec_raw(NOT_FINISHED, 0, 0, 204),
            rec(Category::Salu, 0, 4, 208)
        ]
    );
    // The third INST names index 2, past the end: it is lost.
    w.inst(1, 216, &mut phase);
    assert_eq!(w.wave.insts.len(), 2);
}

#[test]
fn a_stale_index_on_an_immediate_reclassifies_it_keeping_its_stall() {
    let mut w = wave();
    let mut phase = 0;
    w.issue(ISSUE_INST, 100);
    w.issue(ISSUE_INST, 104);
    // After a placeholder the immediate starts at its token: stall = duration = 4.
    w.issue(ISSUE_IMMED, 108);
    // Drops the first placeholder.
    w.inst(9, 112, &mut phase);
    // The SALU's INST names index 1, the immediate: phase 0 + 5, so 4 + max(116 - 108 - 4, 0)
    // = 8 cycles; no stall start, so the immediate's stall is kept.
    w.inst(1, 116, &mut phase);
    assert_eq!(
        w.wave.insts,
        vec![
            rec_raw(NOT_FINISHED, 0, 0, 104),
            rec(Category::Salu, 4, 8, 108)
        ]
    );
}

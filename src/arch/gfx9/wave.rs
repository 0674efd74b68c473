//! One traced gfx9 wave: the ISSUE/INST timing model (SQTT_FORMAT §3.4 with ERRATA part 2
//! G2–G8) and its timeline.

use std::collections::VecDeque;

use crate::records::{Category, Pc, WaveState, WaveStateKind};

/// Category of an issued instruction whose INST token has not arrived (outside the public enum).
pub const NOT_FINISHED: u8 = 14;

/// One instruction record while the wave is being decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub time: i64,
    pub duration: i64,
    pub stall: i64,
    pub category: u8,
}

impl Record {
    pub fn end(&self) -> i64 {
        self.time + self.duration
    }
}

/// What an INST type does to its placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// Classify the placeholder.
    Classify,
    /// Classify as SALU; the next instruction's PC comes from INST_PC.
    PcFollows,
    /// The wave enters its trap handler.
    Trap,
    /// `s_endpgm`/`s_barrier`: timed from the previous record's end (ERRATA G5).
    Msg,
    /// An xnack replay of the given original type: extends that instruction.
    Replay(u8),
    /// Not an instruction of the wave: the placeholder is removed.
    Drop,
}

/// INST type -> (category, phase offset, action), SQTT_FORMAT §3.2/§3.4, ERRATA G9.
const INST_TYPES: [(Category, i64, Action); 32] = {
    use Action::*;
    use Category::*;
    const SALU_PHASE: i64 = 5;
    const VALU_PHASE: i64 = 2;
    const MISC_PHASE: i64 = 1;
    [
        (Smem, SALU_PHASE, Classify), // 0 SMEM_RD
        (Salu, SALU_PHASE, Classify), // 1 SALU_32
        (Vmem, 0, Classify),          // 2 VMEM_RD
        (Vmem, 0, Classify),          // 3 VMEM_WR
        (Flat, 0, Classify),          // 4 FLAT_WR
        (Valu, VALU_PHASE, Classify), // 5 VALU_32
        (Lds, MISC_PHASE, Classify),  // 6 LDS
        (Salu, 0, PcFollows),         // 7 PC
        (None, 0, Drop),              // 8 EXPREQ_GDS
        (None, 0, Drop),              // 9 EXPREQ_GFX
        (None, 0, Drop),              // 10 EXPGNT_PAR_COL
        (None, 0, Drop),              // 11 EXPGNT_POS_GDS
        (Jump, MISC_PHASE, Classify), // 12 JUMP
        (Next, MISC_PHASE, Classify), // 13 NEXT
        (Flat, 0, Classify),          // 14 FLAT_RD
        (Message, MISC_PHASE, Msg),   // 15 OTHER_MSG
        (Smem, SALU_PHASE, Classify), // 16 SMEM_WR
        (Salu, SALU_PHASE, Classify), // 17 SALU_64
        (Valu, VALU_PHASE, Classify), // 18 VALU_64
        (None, 0, Replay(0)),         // 19 SMEM_RD_REPLAY
        (None, 0, Replay(16)),        // 20 SMEM_WR_REPLAY
        (None, 0, Replay(2)),         // 21 VMEM_RD_REPLAY
        (None, 0, Replay(3)),         // 22 VMEM_WR_REPLAY
        (None, 0, Replay(4)),         // 23 FLAT_WR_REPLAY
        (None, 0, Replay(14)),        // 24 FLAT_RD_REPLAY
        (None, 0, Drop),              // 25 FATAL_HALT
        (None, 0, Drop),              // 26 reserved
        (None, 0, Drop),              // 27 reserved
        (Valu, VALU_PHASE, Classify), // 28 VALU_MAI
        (Context, 0, Trap),           // 29 GO_TO_TRAP
        (None, 0, Drop),              // 30
        (None, 0, Drop),              // 31
    ]
};

/// ISSUE status of one wave slot.
pub const ISSUE_STALL: u64 = 1;
pub const ISSUE_INST: u64 = 2;
pub const ISSUE_IMMED: u64 = 3;

/// Context save/restore progress of a wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapStatus {
    Restored,
    Request,
    Standby,
    WaitForNewPc,
}

/// The timeline state before an OTHER_MSG record was timed, so that a following immediate can
/// take its place (ERRATA G2).
#[derive(Clone, Copy, Debug)]
struct MessageUndo {
    index: usize,
    issue_time: i64,
    timeline_len: usize,
    last_entry: Option<WaveState>,
    state: WaveStateKind,
    state_start: i64,
}

/// Identity of a wave as its start token gave it.
#[derive(Clone, Copy, Debug, Default)]
pub struct WaveIdentity {
    pub simd: u8,
    pub slot: u8,
    pub me: u8,
    pub pipe: u8,
    pub workgroup: u8,
}

pub struct Gfx9Wave {
    pub id: WaveIdentity,
    pub begin_time: i64,
    pub end_time: i64,
    pub complete: bool,
    pub contexts: u8,
    pub trap_status: TrapStatus,
    pub trapping: bool,
    pub records: Vec<Record>,
    pub timeline: Vec<WaveState>,
    /// `(record index, pc)`: where the stitcher must (re)start; slot 0 is the kernel entry.
    pub pc_slots: Vec<(usize, Pc)>,
    state: WaveStateKind,
    state_start: i64,
    /// Placeholders waiting for their INST token, oldest first.
    issued: VecDeque<usize>,
    stall_starts: VecDeque<i64>,
    /// Per INST type: 1 + index of the latest record of that type (0 = none), for replays.
    last_of_type: [usize; 32],
    message: Option<MessageUndo>,
}

fn add_span(timeline: &mut Vec<WaveState>, state: WaveStateKind, duration: i64) {
    match timeline.last_mut() {
        Some(last) if last.kind == state as i32 => last.duration += duration as i32,
        _ => timeline.push(WaveState {
            kind: state as i32,
            duration: duration as i32,
        }),
    }
}

/// Cuts `prev` so it does not extend past `time` (at least 4 cycles).
fn trim(prev: &mut Record, time: i64) {
    if time < prev.end() {
        prev.duration = (time - prev.time).max(4);
        prev.stall = prev.stall.min(prev.duration);
    }
}

impl Gfx9Wave {
    pub fn new(id: WaveIdentity, start_pc: Pc, time: i64) -> Self {
        Gfx9Wave {
            id,
            begin_time: time,
            end_time: 0,
            complete: false,
            contexts: 0,
            trap_status: TrapStatus::Restored,
            trapping: false,
            records: Vec::new(),
            timeline: Vec::new(),
            pc_slots: vec![(0, start_pc)],
            state: WaveStateKind::Idle,
            state_start: time,
            issued: VecDeque::new(),
            stall_starts: VecDeque::new(),
            last_of_type: [0; 32],
            message: None,
        }
    }

    /// Moves the state clock to `time`, crediting the elapsed span to the current state.
    fn credit_until(&mut self, time: i64) {
        if time > self.state_start {
            add_span(&mut self.timeline, self.state, time - self.state_start);
            self.state_start = time;
        }
    }

    /// One wave's status in an ISSUE token.
    pub fn issue(&mut self, status: u64, t: i64) {
        if self.trap_status != TrapStatus::Restored {
            return;
        }
        match status {
            ISSUE_IMMED => self.immediate(t),
            ISSUE_STALL => {
                self.stall_starts.push_back(t);
                self.change_state(WaveStateKind::Stall, t);
            }
            ISSUE_INST => {
                self.issued.push_back(self.records.len());
                self.records.push(Record {
                    time: t,
                    duration: 0,
                    stall: 0,
                    category: NOT_FINISHED,
                });
                self.change_state(WaveStateKind::Exec, t);
            }
            _ => {}
        }
    }

    /// A state change at `t`; staying in the same state does not move the state clock (G8).
    fn change_state(&mut self, state: WaveStateKind, t: i64) {
        if state != self.state {
            self.credit_until(t);
            self.state = state;
        }
    }

    fn immediate(&mut self, t: i64) {
        let merged = self
            .message
            .take()
            .filter(|m| m.index + 1 == self.records.len());
        let time = if let Some(m) = merged {
            // The OTHER_MSG record was an s_barrier: the immediate replaces it (ERRATA G2).
            self.records.truncate(m.index);
            self.timeline.truncate(m.timeline_len);
            if let (Some(entry), Some(last)) = (m.last_entry, self.timeline.last_mut()) {
                *last = entry;
            }
            self.state = m.state;
            self.state_start = m.state_start;
            let prev_end = self.records.last().map_or(m.issue_time, Record::end);
            prev_end.max(m.issue_time).min(t)
        } else {
            match self.records.last_mut() {
                Some(last) if last.category != NOT_FINISHED => {
                    trim(last, t);
                    last.end().min(t)
                }
                _ => t,
            }
        };
        let cycles = 4 + (t - time).max(0);
        self.records.push(Record {
            time,
            duration: cycles,
            stall: cycles,
            category: Category::Immed as u8,
        });
        self.wait_span(time, time + cycles);
    }

    /// The current state until `from`, then a WAIT entry of its own until `to`; EXEC after.
    fn wait_span(&mut self, from: i64, to: i64) {
        self.credit_until(from);
        self.timeline.push(WaveState {
            kind: WaveStateKind::Wait as i32,
            duration: (to - from) as i32,
        });
        self.state = WaveStateKind::Exec;
        self.state_start = self.state_start.max(to);
    }

    /// An INST token for this wave; `phase_counter` is the SE buffer's CYCLE_START_PHASE.
    pub fn inst(&mut self, inst_type: u8, t: i64, phase_counter: &mut i64) {
        let (category, phase_offset, action) = INST_TYPES[inst_type as usize & 31];
        if self.trap_status == TrapStatus::WaitForNewPc && action == Action::PcFollows {
            self.pc_slots.push((self.records.len(), Pc::NONE));
            self.trap_status = TrapStatus::Restored;
            if let Some(last) = self
                .records
                .last_mut()
                .filter(|r| r.category == Category::Context as u8)
            {
                last.duration = t + 4 - last.time;
            }
            return;
        }
        if self.trap_status != TrapStatus::Restored {
            return;
        }
        let Some(index) = self.issued.pop_front() else {
            return;
        };
        let Some(issue_time) = self.records.get(index).map(|r| r.time) else {
            return;
        };

        if self.overlaps_newest(index, issue_time) {
            *phase_counter += 1;
        }
        if let Some(prev) = index.checked_sub(1).and_then(|i| self.records.get_mut(i)) {
            trim(prev, issue_time);
        }
        let prev_end = index
            .checked_sub(1)
            .and_then(|i| self.records.get(i))
            .map(Record::end);

        match action {
            Action::Replay(original) => {
                self.replay(original, index, t);
                return;
            }
            Action::Drop => {
                self.remove_placeholder(index);
                return;
            }
            _ => {}
        }
        if let Some(last) = self.last_of_type.get_mut(inst_type as usize) {
            *last = index + 1;
        }
        let phase = (*phase_counter + self.id.simd as i64) % 4 + phase_offset;
        let mut rec = Record {
            time: issue_time,
            duration: 4 + (t - issue_time - 4 * (phase / 4)).max(0),
            stall: 0,
            category: category as u8,
        };
        match action {
            Action::PcFollows => self.pc_slots.push((index + 1, Pc::NONE)),
            Action::Trap => {
                self.trap_status = TrapStatus::WaitForNewPc;
                self.trapping = true;
                let last = self.records.len() - 1;
                for slot in self.pc_slots.iter_mut().filter(|s| s.0 == last) {
                    slot.0 += 1;
                }
            }
            _ => {}
        }
        if action == Action::Msg {
            let end = rec.end();
            rec.time = prev_end.unwrap_or(issue_time).min(issue_time);
            rec.duration = end - rec.time;
            self.message = Some(MessageUndo {
                index,
                issue_time,
                timeline_len: self.timeline.len(),
                last_entry: self.timeline.last().copied(),
                state: self.state,
                state_start: self.state_start,
            });
            self.records[index] = rec;
            self.wait_span(rec.time, end);
            return;
        }
        if self.stall_starts.front().is_some_and(|&s| rec.time > s) {
            let floor = prev_end.unwrap_or(0);
            let mut stall_start = rec.time;
            while let Some(&s) = self.stall_starts.front().filter(|&&s| rec.time > s) {
                stall_start = s.max(floor);
                self.stall_starts.pop_front();
            }
            rec.stall = (rec.time - stall_start).max(0);
            rec.duration = (rec.end() - stall_start).max(4);
            rec.time = stall_start;
        }
        self.records[index] = rec;
    }

    /// CYCLE_START_PHASE rule (ERRATA part 2 G3, settled against the goldens): the counter
    /// advances when this instruction was issued before the end of the record just before the
    /// newest one (ends taken before this INST trims them). When that record is this
    /// instruction itself (a later placeholder is already queued), the record before it
    /// counts only if it is SMEM.
    fn overlaps_newest(&self, index: usize, issue_time: i64) -> bool {
        let mut reference = self.records.len().checked_sub(2);
        if reference == Some(index) {
            reference = index.checked_sub(1).filter(|&i| {
                self.records
                    .get(i)
                    .is_some_and(|r| r.category == Category::Smem as u8)
            });
        }
        reference
            .and_then(|i| self.records.get(i))
            .is_some_and(|r| issue_time < r.end())
    }

    fn replay(&mut self, original: u8, index: usize, t: i64) {
        let latest = std::mem::take(&mut self.last_of_type[original as usize]);
        if latest > 0 && latest < index {
            if let Some(orig) = self.records.get_mut(latest - 1) {
                let before = orig.duration;
                orig.duration = orig.duration.max(t + 4 - orig.time);
                orig.stall += orig.duration - before;
            }
        }
        self.remove_placeholder(index);
    }

    /// Removes a placeholder that turned out not to be an instruction of this wave.
    fn remove_placeholder(&mut self, index: usize) {
        if index < self.records.len() {
            self.records.remove(index);
            for queued in self.issued.iter_mut().filter(|q| **q > index) {
                *queued -= 1;
            }
        }
    }

    /// The context-save WAVE_START for a wave asked to trap.
    pub fn context_switch(&mut self, t: i64) {
        match self.trap_status {
            TrapStatus::Request => {
                self.contexts = self.contexts.saturating_add(1);
                self.trap_status = TrapStatus::Standby;
                self.records.push(Record {
                    time: t,
                    duration: 4,
                    stall: 0,
                    category: Category::Context as u8,
                });
                self.trapping = true;
            }
            TrapStatus::Standby => self.trap_status = TrapStatus::WaitForNewPc,
            _ => {}
        }
    }

    /// INST_PC: the PC of the instruction after a jump (or after a trap).
    pub fn new_pc(&mut self, pc: Pc) {
        if self.trap_status != TrapStatus::Restored {
            return;
        }
        let first_unset = self
            .pc_slots
            .iter()
            .rposition(|(_, p)| *p != Pc::NONE)
            .map_or(0, |i| i + 1);
        if first_unset == self.pc_slots.len() {
            self.pc_slots.push((self.records.len(), Pc::NONE));
        }
        self.pc_slots[first_unset].1 = pc;
    }

    /// WAVE_END: the timeline closes at `t`, which is also the wave's end (ERRATA G4).
    pub fn complete(&mut self, t: i64) {
        self.credit_until(t);
        self.state = WaveStateKind::Empty;
        self.end_time = t;
        self.complete = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave() -> Gfx9Wave {
        Gfx9Wave::new(WaveIdentity::default(), Pc::NONE, 100)
    }

    fn rec(cat: Category, stall: i64, dur: i64, time: i64) -> Record {
        Record {
            time,
            duration: dur,
            stall,
            category: cat as u8,
        }
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
            w.records,
            vec![
                rec(Category::Smem, 0, 4, 200),
                rec(Category::Salu, 0, 4, 204)
            ]
        );
        assert_eq!(
            w.timeline,
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
        assert_eq!(w.records[1], rec(Category::Immed, 724, 724, 208));
        let kinds: Vec<_> = w.timeline.iter().map(|s| (s.kind, s.duration)).collect();
        assert_eq!(kinds, vec![(1, 100), (2, 8), (3, 724)]);
        w.complete(1000);
        assert_eq!(w.end_time, 1000);
        assert_eq!(
            w.timeline.last().map(|s| (s.kind, s.duration)),
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
        assert_eq!(w.records[1], rec(Category::Valu, 4, 12, 208));
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
        assert_eq!(w.records.len(), 3);
        assert_eq!(w.records[2].category, Category::Message as u8);
        w.issue(ISSUE_IMMED, 216);
        assert_eq!(w.records.len(), 3);
        assert_eq!(w.records[2], rec(Category::Immed, 8, 8, 212));
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
        assert_eq!(w.records[1], rec(Category::Message, 0, 288, 216));
    }

    #[test]
    fn unknown_types_drop_their_placeholder() {
        let mut w = wave();
        let mut phase = 0;
        w.issue(ISSUE_INST, 200);
        w.issue(ISSUE_INST, 204);
        w.inst(9, 208, &mut phase);
        w.inst(1, 208, &mut phase);
        assert_eq!(w.records, vec![rec(Category::Salu, 0, 4, 204)]);
    }
}

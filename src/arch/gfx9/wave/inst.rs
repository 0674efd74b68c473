//! INST tokens of one wave: each classifies (or removes) the oldest waiting placeholder and
//! times its record (docs/timing/gfx9.md T3-T10).

use std::hint::select_unpredictable;

use super::{end, record, trim, Gfx9Wave, Timed, TrapStatus, NO_STALL};
use crate::records::{Category, Inst};
use crate::wave::PcSlot;

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

/// INST type -> (category, phase offset, action): docs/timing/gfx9.md T3, T8, T10.
const INST_TYPES: [(Category, u8, Action); 32] = {
    use Action::*;
    use Category::*;
    const SALU_PHASE: u8 = 5;
    const VALU_PHASE: u8 = 2;
    const MISC_PHASE: u8 = 1;
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
        (Message, 0, Msg),            // 15 OTHER_MSG: timed by its token, no phase
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

impl Gfx9Wave {
    /// An INST token for this wave; `phase_counter` is the SE buffer's CYCLE_START_PHASE.
    /// Inlined into the walk's INST arm: a call a token cost the busy captures 1.5 % of their
    /// instructions, and the walk no longer carries the preambles, which paid for its size.
    #[inline(always)]
    pub fn inst(&mut self, inst_type: u8, t: i64, phase_counter: &mut i64) {
        let inst_type = usize::from(inst_type) & 31;
        if self.trap_status != TrapStatus::Restored {
            self.inst_in_trap(inst_type, t);
            return;
        }
        let (category, phase_offset, action) = INST_TYPES[inst_type];
        let Some(&index) = self.placeholders.get(self.next_placeholder) else {
            return;
        };
        self.next_placeholder += 1;
        let insts: &mut [Inst] = &mut self.wave.insts;
        // A placeholder's stall is 0; a record named by a stale index (T10) keeps its own
        // unless a stall moves it.
        let Some(held) = insts.get(index) else {
            return;
        };
        let (issue_time, held_stall) = (held.time, held.stall());
        // CYCLE_START_PHASE rule (docs/timing/gfx9.md T4): the counter advances when this
        // instruction was issued before the end of the record second from the end of the
        // wave's list, taken before this INST trims anything. With later placeholders queued
        // that record is a placeholder (its end is its issue time), possibly this one.
        if let Some(second_newest) = insts.len().checked_sub(2).map(|i| &insts[i]) {
            if issue_time < end(second_newest) {
                *phase_counter += 1;
            }
        }
        let prev_end = index.checked_sub(1).map(|i| {
            let prev = &mut insts[i];
            trim(prev, issue_time);
            end(prev)
        });
        // Never negative: `& !3` rounds down to a multiple of 4 cycles.
        let phase = ((*phase_counter + i64::from(self.simd())) & 3) + i64::from(phase_offset);
        let duration = 4 + (t - issue_time - (phase & !3)).max(0);
        // Most INST types only classify their placeholder; the others take the longer way.
        if action == Action::Classify {
            self.last_of_type[inst_type] = index + 1;
            let timed = Timed {
                index,
                category: category as u8,
                issue_time,
                held_stall,
                prev_end,
            };
            self.settle(timed, duration);
        } else {
            self.inst_action(action, inst_type, index, duration, t);
        }
    }

    /// [`Gfx9Wave::inst`] for a wave in a trap: only the INST_PC that ends it counts.
    #[cold]
    #[inline(never)]
    fn inst_in_trap(&mut self, inst_type: usize, t: i64) {
        if self.trap_status == TrapStatus::WaitForNewPc
            && INST_TYPES[inst_type].2 == Action::PcFollows
        {
            self.return_from_trap(t);
        }
    }

    /// [`Gfx9Wave::inst`] for an INST type whose action is not [`Action::Classify`].
    #[inline(never)]
    fn inst_action(
        &mut self,
        action: Action,
        inst_type: usize,
        index: usize,
        duration: i64,
        t: i64,
    ) {
        // It may trap, wait for a message's answer or add timeline entries.
        self.issue_room = 0;
        // The placeholder and the record before it, as `inst` left them.
        let insts = &self.wave.insts;
        let timed = Timed {
            index,
            category: INST_TYPES[inst_type].0 as u8,
            issue_time: insts[index].time,
            held_stall: insts[index].stall(),
            prev_end: index.checked_sub(1).map(|i| end(&insts[i])),
        };
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
        self.last_of_type[inst_type] = index + 1;
        match action {
            Action::PcFollows => self.wave.slots.push(PcSlot {
                index: index + 1,
                pc: None,
            }),
            Action::Trap => {
                self.trap_status = TrapStatus::WaitForNewPc;
                self.wave.trapped = true;
                let last = self.wave.insts.len() - 1;
                for slot in self.wave.slots.iter_mut().filter(|s| s.index == last) {
                    slot.index += 1;
                }
            }
            _ => {}
        }
        if action == Action::Msg && index + 1 < self.wave.insts.len() {
            // An OTHER_MSG for an instruction issued before the newest one (seen only on damaged
            // streams): the reference drops its record.
            self.remove_placeholder(index);
            return;
        }
        if action == Action::Msg {
            self.message_record(timed, t);
            return;
        }
        self.settle(timed, duration);
    }

    /// Writes the record of a classified INST lasting `duration` from its issue. Stalls before
    /// the issue move the instruction back to the last one's start (not before the previous
    /// record's end). One stall is the usual case, taken without a branch on whether there is
    /// one.
    #[inline(always)]
    fn settle(&mut self, timed: Timed, duration: i64) {
        let issue_time = timed.issue_time;
        let floor = timed.prev_end.unwrap_or(0);
        let stalls = &self.stall_starts;
        let mut head = self.stall_head;
        let next = stalls[head.min(stalls.len() - 1)];
        let pending = select_unpredictable(head < stalls.len(), next, NO_STALL);
        let stalled = issue_time > pending;
        let mut stall_start = select_unpredictable(stalled, pending.max(floor), issue_time);
        head += usize::from(stalled);
        while let Some(&s) = stalls.get(head).filter(|&&s| issue_time > s) {
            stall_start = s.max(floor);
            head += 1;
        }
        self.stall_head = head;
        // Without a stall `stall_start == issue_time`: the duration stays (at least 4).
        let stall = select_unpredictable(
            stalled,
            (issue_time - stall_start).max(0),
            i64::from(timed.held_stall),
        );
        let duration = (issue_time + duration - stall_start).max(4);
        self.wave.insts[timed.index] = record(stall_start, timed.category, duration, stall);
    }

    fn replay(&mut self, original: u8, index: usize, t: i64) {
        let latest = std::mem::take(&mut self.last_of_type[original as usize]);
        if latest > 0 && latest < index {
            if let Some(orig) = self.wave.insts.get_mut(latest - 1) {
                let before = orig.duration;
                orig.duration = i64::from(orig.duration).max(t + 4 - orig.time) as i32;
                let stall = orig
                    .stall()
                    .wrapping_add(orig.duration.wrapping_sub(before) as u32);
                orig.set_stall(stall & 0xFF_FFFF);
            }
        }
        self.remove_placeholder(index);
    }

    /// Removes a placeholder that turned out not to be an instruction of this wave. The queued
    /// indices of later placeholders are left as they are, as the reference leaves them: each
    /// then names the record after its own (rule T10).
    fn remove_placeholder(&mut self, index: usize) {
        self.removed_placeholder = true;
        self.wave.took_back_record = true;
        if index < self.wave.insts.len() {
            self.wave.insts.remove(index);
        }
    }
}

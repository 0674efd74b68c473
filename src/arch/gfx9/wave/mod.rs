//! One traced gfx9 wave: the ISSUE/INST timing model (SQTT_FORMAT §3.4 with ERRATA part 2
//! G2–G8) and its timeline, recorded into the shared [`WaveBuilder`].
//!
//! Records are kept in the ABI layout (`duration` i32, `stall` 24 bits) throughout, as the
//! reference computes on its output records.
//!
//! The wave's state and lifecycle are here; [`issue`] takes the ISSUE statuses (the inline fast
//! path and the state clock), [`inst`] the INST tokens, [`message`] the OTHER_MSG records that a
//! later token may take back.

mod inst;
mod issue;
mod message;
#[cfg(test)]
mod tests;

use crate::records::{Category, Inst, Pc, WaveState, WaveStateKind};
use crate::wave::{PcSlot, WaveBuilder, WaveIdentity};

/// Category of an issued instruction whose INST token has not arrived (outside the public enum).
pub const NOT_FINISHED: u8 = 14;

fn end(inst: &Inst) -> i64 {
    inst.time + i64::from(inst.duration)
}

/// Past the end of a wave's stall queue: no instruction is issued after it.
const NO_STALL: i64 = i64::MAX;

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

/// The placeholder an INST token takes, as its record is timed.
struct Timed {
    index: usize,
    category: u8,
    issue_time: i64,
    /// The stall the record at `index` holds (non-zero only under a stale index, T10).
    held_stall: u32,
    /// End of the record before it, after trimming to the issue time.
    prev_end: Option<i64>,
}

/// A traced wave; the buffers are reused for the next wave of the slot (see [`Gfx9Wave::restart`]).
pub struct Gfx9Wave {
    /// Records, timeline, PC slots and identity, as handed to the stitcher and emitter.
    pub wave: WaveBuilder,
    /// Private: a change ends the ISSUE fast path's permit ([`Gfx9Wave::issue_room`]).
    trap_status: TrapStatus,
    /// Indices of the placeholders waiting for their INST token, oldest first; those before
    /// `next_placeholder` are taken.
    placeholders: Vec<usize>,
    next_placeholder: usize,
    /// A placeholder was removed: later queued indices name other records (T10), so a record
    /// may stay unclassified even once every queued index is taken.
    removed_placeholder: bool,
    /// Start times of the wave's STALL statuses after a first entry that stands for none; those
    /// from `stall_head` (at least 1) on are not yet folded into an instruction. The first entry
    /// lets an INST read the queue's next entry without a branch on whether there is one.
    stall_starts: Vec<i64>,
    stall_head: usize,
    /// Per INST type: 1 + index of the latest record of that type (0 = none), for replays.
    last_of_type: [usize; 32],
    message: Option<MessageUndo>,
    /// Time of the latest ISSUE token applied to the wave.
    last_issue: i64,
    /// How many more INST or STALL statuses [`Gfx9Wave::issue`] may take inline: while it is
    /// non-zero the wave is running with no message waiting, its timeline has an entry, and each
    /// of the four buffers [`Gfx9Wave::issue_status`] writes has at least this many spare
    /// entries. Only
    /// [`Gfx9Wave::renew_issue_room`] raises it; every other method that changes the trap
    /// status or the message, or adds entries to those buffers, runs out of line and sets it
    /// to 0 first (restart, issue_rare, inst_action, request_trap, context_switch, cut_short,
    /// complete), and a wave handed to the emitter is restarted before its next ISSUE.
    issue_room: usize,
}

fn add_span(timeline: &mut Vec<WaveState>, state: WaveStateKind, duration: i64) {
    match timeline.last_mut() {
        Some(last) if last.kind == state as i32 => {
            last.duration = last.duration.wrapping_add(duration as i32)
        }
        _ => timeline.push(WaveState {
            kind: state as i32,
            duration: duration as i32,
        }),
    }
}

/// Cuts `prev` so it does not extend past `time` (at least 4 cycles).
fn trim(prev: &mut Inst, time: i64) {
    if time < end(prev) {
        prev.duration = (time - prev.time).max(4) as i32;
        let stall = prev.stall().min(prev.duration.max(0) as u32);
        prev.set_stall(stall);
    }
}

fn record(time: i64, category: u8, duration: i64, stall: i64) -> Inst {
    Inst::new(
        category,
        stall.max(0) as u32 & 0xFF_FFFF,
        duration as i32,
        time,
        Pc::NONE,
    )
}

impl Default for Gfx9Wave {
    fn default() -> Self {
        Gfx9Wave {
            wave: WaveBuilder::default(),
            trap_status: TrapStatus::Restored,
            placeholders: Vec::new(),
            next_placeholder: 0,
            removed_placeholder: false,
            stall_starts: vec![NO_STALL],
            stall_head: 1,
            last_of_type: [0; 32],
            message: None,
            last_issue: 0,
            issue_room: 0,
        }
    }
}

impl Gfx9Wave {
    /// Starts a new wave at `time` whose kernel entry is `start_pc`, keeping the buffers.
    pub fn restart(&mut self, id: WaveIdentity, start_pc: Pc, time: i64) {
        self.wave.restart(id, time, start_pc);
        if start_pc == Pc::NONE {
            // No kernel entry known (lost WAVE_START, no PGM registers): the wave has no pinned
            // PC until a PC-type INST opens a slot (docs/timing/gfx9.md, rule S1).
            self.wave.slots.clear();
        }
        // The end stays 0 until WAVE_END (an abandoned wave's end is derived at emission).
        self.wave.end_time = 0;
        self.trap_status = TrapStatus::Restored;
        self.placeholders.clear();
        self.next_placeholder = 0;
        self.removed_placeholder = false;
        self.stall_starts.truncate(1);
        self.stall_head = 1;
        self.last_of_type = [0; 32];
        self.message = None;
        self.last_issue = time;
        self.issue_room = 0;
    }

    /// Entries (records, timeline spans, PC slots) the buffers can hold without growing.
    pub fn capacity(&self) -> usize {
        let w = &self.wave;
        w.insts.capacity() + w.timeline.capacity() + w.slots.capacity()
    }

    pub fn simd(&self) -> u8 {
        self.wave.id.simd
    }

    /// Moves the state clock to `time`, crediting the elapsed span to the current state.
    fn credit_until(&mut self, time: i64) {
        let w = &mut self.wave;
        if time > w.last_state_cycle {
            add_span(&mut w.timeline, w.state, time - w.last_state_cycle);
            w.last_state_cycle = time;
        }
    }

    /// Whether the wave runs outside a trap (or a context save in progress).
    pub fn restored(&self) -> bool {
        self.trap_status == TrapStatus::Restored
    }

    /// SAVE_CONTEXT: a running wave is asked to trap.
    pub fn request_trap(&mut self) {
        self.issue_room = 0;
        self.trap_status = TrapStatus::Request;
    }

    /// The INST_PC announcing where the wave resumes after its trap handler.
    fn return_from_trap(&mut self, t: i64) {
        self.wave.open_pc_slot();
        self.trap_status = TrapStatus::Restored;
        let context = Category::Context as u8;
        if let Some(last) = self
            .wave
            .insts
            .last_mut()
            .filter(|r| r.category() == context)
        {
            last.duration = (t + 4 - last.time) as i32;
        }
    }

    /// Whether a record may still be an unclassified placeholder ([`NOT_FINISHED`]): an
    /// issued instruction whose INST token has not come, or one a stale index passed over.
    pub fn may_hold_unfinished(&self) -> bool {
        self.removed_placeholder || self.next_placeholder < self.placeholders.len()
    }

    /// The context-save WAVE_START for a wave asked to trap.
    pub fn context_switch(&mut self, t: i64) {
        self.issue_room = 0;
        match self.trap_status {
            TrapStatus::Request => {
                self.wave.contexts = self.wave.contexts.saturating_add(1);
                self.trap_status = TrapStatus::Standby;
                self.wave
                    .insts
                    .push(record(t, Category::Context as u8, 4, 0));
                self.wave.trapped = true;
            }
            TrapStatus::Standby => self.trap_status = TrapStatus::WaitForNewPc,
            _ => {}
        }
    }

    /// INST_PC: the PC of the instruction after a jump (or after a trap).
    pub fn new_pc(&mut self, pc: Pc) {
        // Ignored until the wave has a slot: the reference keeps no slot for an unknown entry.
        if self.trap_status != TrapStatus::Restored || self.wave.slots.is_empty() {
            return;
        }
        let slots = &mut self.wave.slots;
        let unset = |s: &PcSlot| s.pc.is_none_or(|p| p == Pc::NONE);
        let first_unset = slots.iter().rposition(|s| !unset(s)).map_or(0, |i| i + 1);
        if first_unset == slots.len() {
            slots.push(PcSlot {
                index: self.wave.insts.len(),
                pc: None,
            });
        }
        slots[first_unset].pc = Some(pc);
    }

    /// The buffer ended before WAVE_END. As the reference: an OTHER_MSG record still waiting to
    /// learn whether it was a barrier (its immediate) is taken back, and the state held since
    /// the last change is credited up to the wave's latest ISSUE, even where that ISSUE did not
    /// change it.
    pub fn cut_short(&mut self) {
        self.issue_room = 0;
        if let Some(m) = self
            .message
            .take()
            .filter(|m| m.index + 1 == self.wave.insts.len())
        {
            self.withdraw(&m);
        }
        self.credit_until(self.last_issue);
    }

    /// WAVE_END: the timeline closes at `t`, which is also the wave's end (ERRATA G4).
    pub fn complete(&mut self, t: i64) {
        self.issue_room = 0;
        // A message that starts at the wave's end (an empty kernel's `s_endpgm`, issued with
        // the WAVE_END) is taken back with its span (T12a).
        if let Some(m) = self
            .message
            .take()
            .filter(|m| m.index + 1 == self.wave.insts.len() && self.wave.insts[m.index].time >= t)
        {
            self.withdraw(&m);
        }
        // An instruction issued but never classified (a damaged stream) leaves the wave IDLE
        // from its issue on, as the reference's timeline shows.
        if let Some(newest) = self
            .wave
            .insts
            .last()
            .filter(|r| r.category() == NOT_FINISHED)
        {
            let time = newest.time;
            self.wave.timeline.reserve(1);
            // SAFETY: reserve(1) made room for one more timeline entry.
            unsafe { self.change_state(WaveStateKind::Idle, time) };
        }
        self.credit_until(t);
        self.wave.state = WaveStateKind::Empty;
        self.wave.end_time = t;
        self.wave.complete = true;
    }
}

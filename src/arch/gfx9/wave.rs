//! One traced gfx9 wave: the ISSUE/INST timing model (SQTT_FORMAT §3.4 with ERRATA part 2
//! G2–G8) and its timeline, recorded into the shared [`WaveBuilder`].
//!
//! Records are kept in the ABI layout (`duration` i32, `stall` 24 bits) throughout, as the
//! reference computes on its output records.

use std::hint::select_unpredictable;

use crate::records::{Category, Inst, Pc, WaveState, WaveStateKind};
use crate::wave::{PcSlot, WaveBuilder, WaveIdentity};

/// Category of an issued instruction whose INST token has not arrived (outside the public enum).
pub const NOT_FINISHED: u8 = 14;

fn end(inst: &Inst) -> i64 {
    inst.time + i64::from(inst.duration)
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

/// Writes `value` after `v`'s entries and keeps it if `keep`, without a branch on `keep`.
///
/// # Safety
///
/// `v` has room for one more entry: `v.len() < v.capacity()`.
#[inline(always)]
unsafe fn append_if<T: Copy>(v: &mut Vec<T>, value: T, keep: bool) {
    let len = v.len();
    debug_assert!(len < v.capacity());
    // SAFETY: the slot after the entries is allocated (the caller's room); once written it is
    // initialised, so the length may cover it.
    unsafe {
        v.as_mut_ptr().add(len).write(value);
        v.set_len(len + usize::from(keep));
    }
}

/// Entries the fast ISSUE path gets room for at once: growth checks then run once per this
/// many statuses.
const ISSUE_ROOM_CHUNK: usize = 64;

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

    /// One wave's non-zero status in an ISSUE token. The usual INST or STALL status, while
    /// [`Gfx9Wave::issue_room`] permits, takes [`Gfx9Wave::issue_status`] inline; anything else
    /// (trap, immediate, a message waiting for its answer, buffers to grow) goes out of line.
    pub fn issue(&mut self, status: u64, t: i64) {
        if (status != ISSUE_IMMED) & (self.issue_room != 0) {
            self.issue_room -= 1;
            // SAFETY: a non-zero room means every buffer has a spare entry and the timeline has
            // an entry (see `issue_room`).
            unsafe {
                let state = self.issue_status(status, t);
                self.follow_state(state, t);
            }
        } else {
            self.issue_rare(status, t);
        }
    }

    /// [`Gfx9Wave::issue`] for a wave in a trap, an immediate, a pending message, or buffers
    /// to grow; renews the inline path's room.
    #[cold]
    #[inline(never)]
    fn issue_rare(&mut self, status: u64, t: i64) {
        self.issue_room = 0;
        if self.trap_status != TrapStatus::Restored {
            return;
        }
        if status == ISSUE_INST && self.message.is_some() {
            self.message_unanswered();
        }
        if status == ISSUE_IMMED {
            self.last_issue = t;
            self.immediate(t);
        } else {
            self.wave.insts.reserve(1);
            self.placeholders.reserve(1);
            self.stall_starts.reserve(1);
            self.wave.timeline.reserve(1);
            // SAFETY: reserve(1) made room for one more entry in every buffer.
            unsafe {
                let state = self.issue_status(status, t);
                self.change_state(state, t);
            }
        }
        self.renew_issue_room();
    }

    /// Sets [`Gfx9Wave::issue_room`] for a running wave without a waiting message: room for at
    /// least [`ISSUE_ROOM_CHUNK`] statuses in each buffer, and the spare entries they all have.
    /// A wave whose timeline is still empty (its first statuses) gets none.
    fn renew_issue_room(&mut self) {
        if self.trap_status != TrapStatus::Restored
            || self.message.is_some()
            || self.wave.timeline.is_empty()
        {
            return;
        }
        self.wave.insts.reserve(ISSUE_ROOM_CHUNK);
        self.placeholders.reserve(ISSUE_ROOM_CHUNK);
        self.stall_starts.reserve(ISSUE_ROOM_CHUNK);
        self.wave.timeline.reserve(ISSUE_ROOM_CHUNK);
        let spare = |len: usize, capacity: usize| capacity - len;
        self.issue_room = spare(self.wave.insts.len(), self.wave.insts.capacity())
            .min(spare(self.placeholders.len(), self.placeholders.capacity()))
            .min(spare(self.stall_starts.len(), self.stall_starts.capacity()))
            .min(spare(self.wave.timeline.len(), self.wave.timeline.capacity()));
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

    /// An INST or STALL status (the parser passes only non-zero statuses) of a running wave:
    /// its record, placeholder or stall start; returns the state it enters, for the caller to
    /// change to. They follow each other in no predictable order: both are handled without a
    /// branch on which it is. Each writes an entry after every buffer's entries and keeps its own.
    ///
    /// # Safety
    ///
    /// The records, placeholders and stall starts each have room for one more entry.
    #[inline(always)]
    unsafe fn issue_status(&mut self, status: u64, t: i64) -> WaveStateKind {
        debug_assert!(status == ISSUE_INST || status == ISSUE_STALL);
        self.last_issue = t;
        let is_inst = status == ISSUE_INST;
        let count = self.wave.insts.len();
        // SAFETY: each buffer has room (the caller's contract).
        unsafe {
            append_if(&mut self.wave.insts, record(t, NOT_FINISHED, 0, 0), is_inst);
            append_if(&mut self.placeholders, count, is_inst);
            append_if(&mut self.stall_starts, t, !is_inst);
        }
        select_unpredictable(is_inst, WaveStateKind::Exec, WaveStateKind::Stall)
    }

    /// [`Gfx9Wave::change_state`] for a timeline known to have an entry: the last entry is read
    /// and extended without a test on whether there is one.
    ///
    /// # Safety
    ///
    /// The timeline has an entry and room for one more.
    #[inline(always)]
    unsafe fn follow_state(&mut self, state: WaveStateKind, t: i64) {
        let w = &mut self.wave;
        let credit = (state != w.state) & (t > w.last_state_cycle);
        let span = t.wrapping_sub(w.last_state_cycle) as i32;
        let left = w.state as i32;
        let len = w.timeline.len();
        debug_assert!(len > 0 && len < w.timeline.capacity());
        let entries = w.timeline.as_mut_ptr();
        // SAFETY: the timeline has an entry (the caller's contract).
        let last = unsafe { &mut *entries.add(len - 1) };
        let extends = last.kind == left;
        let added = select_unpredictable(credit & extends, span, 0);
        last.duration = last.duration.wrapping_add(added);
        let entry = WaveState {
            kind: left,
            duration: span,
        };
        // SAFETY: the timeline has room (the caller's contract).
        unsafe { append_if(&mut w.timeline, entry, credit & !extends) };
        w.last_state_cycle = select_unpredictable(credit, t, w.last_state_cycle);
        w.state = state;
    }

    /// A state change at `t`; staying in the same state does not move the state clock (G8).
    /// Without branches on the data, like [`Gfx9Wave::issue_status`]: the span of the state
    /// left is written as a new timeline entry, kept unless it extends the last entry instead.
    ///
    /// # Safety
    ///
    /// The timeline has room for one more entry.
    #[inline(always)]
    unsafe fn change_state(&mut self, state: WaveStateKind, t: i64) {
        let w = &mut self.wave;
        let credit = (state != w.state) & (t > w.last_state_cycle);
        let span = t.wrapping_sub(w.last_state_cycle) as i32;
        let left = w.state as i32;
        let extends = w.timeline.last().is_some_and(|last| last.kind == left);
        let entry = WaveState {
            kind: left,
            duration: span,
        };
        // SAFETY: the timeline has room (the caller's contract).
        unsafe { append_if(&mut w.timeline, entry, credit & !extends) };
        if let Some(last) = w.timeline.last_mut() {
            let added = select_unpredictable(credit & extends, span, 0);
            last.duration = last.duration.wrapping_add(added);
        }
        w.last_state_cycle = select_unpredictable(credit, t, w.last_state_cycle);
        w.state = state;
    }

    fn immediate(&mut self, t: i64) {
        let insts = &mut self.wave.insts;
        let merged = self.message.take().filter(|m| m.index + 1 == insts.len());
        let time = if let Some(m) = merged {
            // The OTHER_MSG record was an s_barrier: the immediate replaces it (ERRATA G2).
            self.withdraw(&m);
            let prev_end = self.wave.insts.last().map_or(m.issue_time, end);
            prev_end.max(m.issue_time).min(t)
        } else {
            match insts.last_mut() {
                Some(last) if last.category() != NOT_FINISHED => {
                    trim(last, t);
                    end(last).min(t)
                }
                _ => t,
            }
        };
        let cycles = 4 + (t - time).max(0);
        self.wave
            .insts
            .push(record(time, Category::Immed as u8, cycles, cycles));
        self.wait_span(time, time + cycles);
    }

    /// A new instruction is issued while the newest record is an OTHER_MSG that no immediate
    /// followed: the message is taken back with its timeline span (docs/timing/gfx9.md T8).
    #[cold]
    fn message_unanswered(&mut self) {
        if let Some(m) = self
            .message
            .take()
            .filter(|m| m.index + 1 == self.wave.insts.len())
        {
            self.withdraw(&m);
        }
    }

    /// Takes back the newest record, an OTHER_MSG one, with its timeline span.
    fn withdraw(&mut self, m: &MessageUndo) {
        self.wave.took_back_record = true;
        self.wave.insts.truncate(m.index);
        self.wave.timeline.truncate(m.timeline_len);
        if let (Some(entry), Some(last)) = (m.last_entry, self.wave.timeline.last_mut()) {
            *last = entry;
        }
        self.wave.state = m.state;
        self.wave.last_state_cycle = m.state_start;
    }

    /// The current state until `from`, then a WAIT entry of its own until `to`; EXEC after.
    fn wait_span(&mut self, from: i64, to: i64) {
        self.credit_until(from);
        let w = &mut self.wave;
        w.timeline.push(WaveState {
            kind: WaveStateKind::Wait as i32,
            duration: (to - from) as i32,
        });
        w.state = WaveStateKind::Exec;
        w.last_state_cycle = w.last_state_cycle.max(to);
    }

    /// An INST token for this wave; `phase_counter` is the SE buffer's CYCLE_START_PHASE.
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
        if self.trap_status == TrapStatus::WaitForNewPc && INST_TYPES[inst_type].2 == Action::PcFollows
        {
            self.return_from_trap(t);
        }
    }

    /// [`Gfx9Wave::inst`] for an INST type whose action is not [`Action::Classify`].
    #[inline(never)]
    fn inst_action(&mut self, action: Action, inst_type: usize, index: usize, duration: i64, t: i64) {
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

    /// The record of an OTHER_MSG INST at `t` and its timeline span (docs/timing/gfx9.md T8).
    fn message_record(&mut self, timed: Timed, t: i64) {
        let issue_time = timed.issue_time;
        // The message ends at its token, but not before 4 cycles after its issue (ERRATA part 2
        // G5; the phase does not apply).
        let msg_end = t.max(issue_time + 4);
        // Stalls before the message's issue are its own, as for every classified INST; the
        // latest moves its start (T8a).
        let mut latest_stall = None;
        while let Some(&s) = self
            .stall_starts
            .get(self.stall_head)
            .filter(|&&s| issue_time > s)
        {
            latest_stall = Some(s);
            self.stall_head += 1;
        }
        let (time, stall) = match latest_stall {
            Some(s) => {
                let start = s.max(timed.prev_end.unwrap_or(0));
                (start, issue_time - start)
            }
            None => (timed.prev_end.unwrap_or(issue_time).min(issue_time), 0),
        };
        self.message = Some(MessageUndo {
            index: timed.index,
            issue_time,
            timeline_len: self.wave.timeline.len(),
            last_entry: self.wave.timeline.last().copied(),
            state: self.wave.state,
            state_start: self.wave.last_state_cycle,
        });
        self.wave.insts[timed.index] = record(time, timed.category, msg_end - time, stall);
        self.message_span(time, msg_end, stall > 0);
    }

    /// A message's timeline span from `from` to `to`: the current state is credited up to
    /// `from`, or, when the state clock is already past it (a stall moved the message back),
    /// the last entry is cut back to it (not below 0); then an entry of its own, STALL for a
    /// stalled message and WAIT otherwise. The wave is IDLE after it (T8a).
    fn message_span(&mut self, from: i64, to: i64, stalled: bool) {
        self.credit_until(from);
        let w = &mut self.wave;
        if from < w.last_state_cycle {
            if let Some(last) = w.timeline.last_mut() {
                let cut = (w.last_state_cycle - from).min(i64::from(last.duration.max(0)));
                last.duration -= cut as i32;
            }
        }
        let kind = if stalled {
            WaveStateKind::Stall
        } else {
            WaveStateKind::Wait
        };
        w.timeline.push(WaveState {
            kind: kind as i32,
            duration: (to - from) as i32,
        });
        w.state = WaveStateKind::Idle;
        w.last_state_cycle = to;
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
        if let Some(m) = self.message.take().filter(|m| {
            m.index + 1 == self.wave.insts.len() && self.wave.insts[m.index].time >= t
        }) {
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

#[cfg(test)]
mod tests {
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
}

//! ISSUE statuses of one wave: placeholders for issued instructions, stall starts, immediates,
//! and the state clock of the timeline. The usual INST and STALL statuses take an inline path
//! without branches on the data, while the wave's [`Gfx9Wave::issue_room`] permits.

use std::hint::select_unpredictable;

use super::{
    end, record, trim, Gfx9Wave, TrapStatus, ISSUE_IMMED, ISSUE_INST, ISSUE_STALL, NOT_FINISHED,
};
use crate::records::{Category, WaveState, WaveStateKind};
use crate::wave::append_if;

/// Entries the fast ISSUE path gets room for at once: growth checks then run once per this
/// many statuses.
const ISSUE_ROOM_CHUNK: usize = 64;

/// Entries an immediate without a waiting message adds to any one buffer: its record, and the
/// timeline's span before it and its wait.
const IMMEDIATE_ENTRIES: usize = 2;

impl Gfx9Wave {
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
        let room = std::mem::take(&mut self.issue_room);
        if self.trap_status != TrapStatus::Restored {
            return;
        }
        if status == ISSUE_INST && self.message.is_some() {
            self.message_unanswered();
        }
        if status == ISSUE_IMMED {
            self.last_issue = t;
            self.immediate(t);
            // With room left there was no message, so the immediate took one record and at most
            // two timeline entries: the room shrinks by that instead of being measured again
            // (the immediates of a GEMM's waves are 1 in 10 of their statuses).
            if room > IMMEDIATE_ENTRIES {
                self.issue_room = room - IMMEDIATE_ENTRIES;
                return;
            }
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
            .min(spare(
                self.wave.timeline.len(),
                self.wave.timeline.capacity(),
            ));
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
    pub(super) unsafe fn change_state(&mut self, state: WaveStateKind, t: i64) {
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
}

//! RDNA's timing of a traced wave (docs/timing/rdna.md §4), recorded into the shared
//! [`WaveBuilder`].

use crate::records::{Category, Inst, Pc, WaveState, WaveStateKind};
use crate::wave::{append_if, PcSlot, WaveBuilder, WaveIdentity};

/// A wave of the traced SIMD; the buffers are reused for the next wave of its slot.
#[derive(Debug, Default)]
pub(super) struct RdnaWave {
    /// Records, timeline, PC slots and identity, as handed to the stitcher and emitter.
    pub(super) wave: WaveBuilder,
}

impl RdnaWave {
    /// A new wave at `t` whose first instruction is at `start_pc` (see [`WaveBuilder::restart`]).
    pub(super) fn start(&mut self, id: WaveIdentity, t: i64, start_pc: Pc) {
        self.wave.restart(id, t, start_pc);
    }

    /// A wave whose start the buffer did not hold, restored from a context save at `t`: it
    /// resumes in the trap handler, so nothing is recorded until its return from trap.
    pub(super) fn start_restored(&mut self, id: WaveIdentity, t: i64) {
        self.wave.restart(id, t, Pc::NONE);
        self.wave.trapped = true;
    }

    /// Credits the timeline with the time the wave executed on since its last change of state,
    /// up to its latest instruction ([`Self::issue`]), as a change of state does: before a
    /// wave the buffer cut short goes out.
    pub(super) fn settle(&mut self) {
        let w = &mut self.wave;
        credit_state(w, executed_until(w, w.last_state_cycle), Vec::push);
    }

    /// WAVE_END was seen.
    pub(super) fn has_ended(&self) -> bool {
        self.wave.complete
    }

    /// In a trap handler (or saved): the wave's instruction tokens are not recorded.
    pub(super) fn is_trapped(&self) -> bool {
        self.wave.trapped
    }

    /// The records the wave's buffer holds without growing.
    pub(super) fn record_capacity(&self) -> usize {
        self.wave.insts.capacity()
    }

    /// NEW_PC: fills the oldest of the open PC slots at the end of the list (a jump and a
    /// return from trap may both wait for their NEW_PC), or pins the next instruction if none
    /// is open.
    pub(super) fn set_next_pc(&mut self, pc: Pc) {
        let w = &mut self.wave;
        let open = w
            .slots
            .iter()
            .rev()
            .take_while(|slot| slot.pc.is_none())
            .count();
        match open {
            0 => w.slots.push(PcSlot {
                index: w.insts.len(),
                pc: Some(pc),
            }),
            _ => {
                let first_open = w.slots.len() - open;
                w.slots[first_open].pc = Some(pc);
            }
        }
    }

    /// An instruction issued at token time `t` taking `cycles`; a stall since the last
    /// WAVE_READY is folded into it (SQTT_FORMAT §3.3). The wave's end time is the INST
    /// token's business ([`RdnaWave::ran_until`]), not this record's.
    ///
    /// The usual case, both buffers with room, calls nothing: the function then needs no
    /// registers saved (most records of a wave are issued here).
    pub(super) fn issue(&mut self, category: Category, cycles: u32, t: i64) {
        let w = &mut self.wave;
        if w.insts.len() == w.insts.capacity() || w.timeline.len() == w.timeline.capacity() {
            return self.issue_making_room(category, cycles, t);
        }
        let mut inst = Inst::new(category as u8, 0, cycles as i32, t, Pc::NONE);
        if w.state == WaveStateKind::Exec {
            // Executing on: the timeline is credited up to this record's time when the state
            // changes (`executed_until`), as the sum of what each instruction would add.
            // SAFETY: the buffer has room for a record (checked above).
            unsafe { append_if(&mut w.insts, inst, true) };
            return;
        }
        if w.state == WaveStateKind::Stall && w.last_state_cycle < t {
            let stall = t.wrapping_sub(w.last_state_cycle);
            inst.set_stall(stall as u32);
            inst.duration = inst.duration.wrapping_add(stall as i32);
            inst.time = w.last_state_cycle;
        }
        // SAFETY: both buffers have room for an entry (checked above).
        unsafe { append_if(&mut w.insts, inst, true) };
        update_state_by(w, WaveStateKind::Exec, t, |timeline, state| {
            // SAFETY: as above; only this entry is added to the timeline.
            unsafe { append_if(timeline, state, true) }
        });
    }

    /// [`Self::issue`] where a buffer is full: grows it first.
    #[cold]
    #[inline(never)]
    fn issue_making_room(&mut self, category: Category, cycles: u32, t: i64) {
        self.wave.insts.reserve(1);
        self.wave.timeline.reserve(1);
        self.issue(category, cycles, t);
    }

    /// A jump (INST id 5) at `t`: a SALU record; the next instruction's PC comes from NEW_PC.
    pub(super) fn jump(&mut self, cycles: u32, t: i64) {
        self.issue(Category::Salu, cycles, t);
        self.wave.open_pc_slot();
    }

    /// An INST token of this wave at `t` while it is not trapped, whatever its id (an ignored
    /// id or a barrier included): the wave has run until at least `t`.
    pub(super) fn ran_until(&mut self, t: i64) {
        self.wave.end_time = t;
    }

    /// WAVE_READY at `t`: the wave stalls until its next instruction, which takes the stall in.
    /// As in [`Self::wait_until`], the usual case (room for a timeline entry) calls nothing.
    pub(super) fn stall_from(&mut self, t: i64) {
        let w = &mut self.wave;
        if w.timeline.len() == w.timeline.capacity() {
            return self.stall_making_room(t);
        }
        // SAFETY: the timeline has room for the one entry the change of state may add.
        let append =
            |timeline: &mut Vec<WaveState>, state| unsafe { append_if(timeline, state, true) };
        update_state_by(w, WaveStateKind::Stall, t, append);
    }

    /// [`Self::stall_from`] where the timeline is full: grows it first.
    #[cold]
    #[inline(never)]
    fn stall_making_room(&mut self, t: i64) {
        self.wave.timeline.reserve(1);
        self.stall_from(t);
    }

    /// An immediate (s_nop, s_wait*, s_clause, barrier) reported at `t`; it started when the
    /// previous instruction ended, and waited until `t`.
    ///
    /// As in [`Self::issue`], the usual case (room for the record and two timeline entries)
    /// calls nothing.
    pub(super) fn wait_until(&mut self, t: i64) {
        let w = &mut self.wave;
        if w.insts.len() == w.insts.capacity() || w.timeline.capacity() - w.timeline.len() < 2 {
            return self.wait_making_room(t);
        }
        let time = last_end(w).map_or(t, |end| end.min(t));
        let stall = t.wrapping_sub(time);
        let inst = Inst::new(
            Category::Immed as u8,
            stall as u32,
            (stall as i32).wrapping_add(1),
            time,
            Pc::NONE,
        );
        // SAFETY: both buffers have room (checked above): one record, and at most one
        // timeline entry for each of the two state changes.
        unsafe { append_if(&mut w.insts, inst, true) };
        let append =
            |timeline: &mut Vec<WaveState>, state| unsafe { append_if(timeline, state, true) };
        update_state_by(w, WaveStateKind::Wait, time, append);
        update_state_by(w, WaveStateKind::Exec, t.wrapping_add(1), append);
    }

    /// [`Self::wait_until`] where a buffer is full: grows it first.
    #[cold]
    #[inline(never)]
    fn wait_making_room(&mut self, t: i64) {
        self.wave.insts.reserve(1);
        self.wave.timeline.reserve(2);
        self.wait_until(t);
    }

    /// Trap entry at `t`; the CONTEXT record stands for the handler. A trap token while
    /// already trapped adds another record.
    pub(super) fn enter_trap(&mut self, t: i64) {
        self.wave
            .insts
            .push(Inst::new(Category::Context as u8, 0, 1, t, Pc::NONE));
        self.wave.trapped = true;
    }

    /// A trap record that is the wave's last record lasts at least until `t + 1` (context
    /// restore, return from trap); any other last record is left as it is.
    fn extend_trap(&mut self, t: i64) {
        if let Some(trap) = self
            .wave
            .insts
            .last_mut()
            .filter(|i| i.category() == Category::Context as u8)
        {
            trap.duration = trap
                .duration
                .max(t.wrapping_add(1).wrapping_sub(trap.time) as i32);
        }
    }

    /// Return from trap at `t`; recording resumes at a PC the trace announces.
    pub(super) fn return_from_trap(&mut self, t: i64) {
        self.wave.trapped = false;
        self.extend_trap(t);
        self.wave.open_pc_slot();
    }

    /// A context save begins: nothing more is recorded until the return from the trap handler
    /// that restores the wave.
    pub(super) fn begin_context_save(&mut self) {
        self.wave.trapped = true;
    }

    /// The wave is saved at `t`: the save enters the trap handler.
    pub(super) fn save_context(&mut self, t: i64) {
        self.wave.contexts = self.wave.contexts.saturating_add(1);
        self.enter_trap(t);
    }

    /// The wave is restored at `t`: it resumes in its trap handler, until the return from trap.
    pub(super) fn restore_context(&mut self, t: i64) {
        self.wave.contexts = self.wave.contexts.saturating_add(1);
        self.extend_trap(t);
        self.wave.trapped = true;
    }

    /// WAVE_END at `t`: s_endpgm produces no token, so a MESSAGE record covers the time from
    /// the last instruction's end, trapped or not (rdna.md §4.4).
    pub(super) fn end(&mut self, t: i64) {
        let w = &mut self.wave;
        update_state(w, WaveStateKind::Empty, t);
        w.end_time = t;
        w.complete = true;
        if let Some(end) = last_end(w).filter(|&end| end < t) {
            w.insts.push(Inst::new(
                Category::Message as u8,
                0,
                t.wrapping_sub(end) as i32,
                end,
                Pc::NONE,
            ));
        }
    }
}

/// Credits the time since the wave's last change of state to the current state (docs/timing/
/// rdna.md §4), then switches to `new`; a wave that executes on, up to its latest instruction
/// if that is later ([`executed_until`]).
fn update_state(w: &mut WaveBuilder, new: WaveStateKind, time: i64) {
    update_state_by(w, new, time, Vec::push);
}

/// [`update_state`], adding a timeline entry with `append`.
#[inline(always)]
fn update_state_by(
    w: &mut WaveBuilder,
    new: WaveStateKind,
    time: i64,
    append: impl FnOnce(&mut Vec<WaveState>, WaveState),
) {
    let until = executed_until(w, time);
    credit_state(w, until, append);
    w.state = new;
}

/// Credits the time from the wave's last change of state to `time`, if later, to its current
/// state: the last timeline entry grows if it is of that state, else `append` adds one.
#[inline(always)]
fn credit_state(
    w: &mut WaveBuilder,
    time: i64,
    append: impl FnOnce(&mut Vec<WaveState>, WaveState),
) {
    if time > w.last_state_cycle {
        let span = time.wrapping_sub(w.last_state_cycle) as i32;
        match w.timeline.last_mut() {
            Some(last) if last.kind == w.state as i32 => {
                last.duration = last.duration.wrapping_add(span)
            }
            _ => append(
                &mut w.timeline,
                WaveState {
                    kind: w.state as i32,
                    duration: span,
                },
            ),
        }
        w.last_state_cycle = time;
    }
}

/// `time`, or for a wave that executes on, the time of its latest instruction if later: the
/// instructions [`RdnaWave::issue`] records while the wave executes credit no time themselves.
/// (Token times only grow: the latest record is the latest issued. Every other record is
/// stamped at or before the time its change of state credits.)
#[inline(always)]
fn executed_until(w: &WaveBuilder, time: i64) -> i64 {
    if w.state != WaveStateKind::Exec {
        return time;
    }
    w.insts.last().map_or(time, |last| last.time.max(time))
}

/// End time of the wave's last record.
fn last_end(w: &WaveBuilder) -> Option<i64> {
    w.insts
        .last()
        .map(|i| i.time.wrapping_add(i64::from(i.duration)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave() -> RdnaWave {
        let mut w = RdnaWave::default();
        w.start(WaveIdentity::default(), 100, Pc::new(0x1000, 0));
        w
    }

    fn timeline(w: &RdnaWave) -> Vec<(i32, i32)> {
        w.wave
            .timeline
            .iter()
            .map(|s| (s.kind, s.duration))
            .collect()
    }

    #[test]
    fn immediates_start_when_the_previous_instruction_ends() {
        let mut w = wave();
        w.wait_until(110);
        w.issue(Category::Smem, 1, 111);
        w.wait_until(200);
        w.wait_until(201);
        let got: Vec<_> = w
            .wave
            .insts
            .iter()
            .map(|i| (i.category(), i.stall(), i.duration, i.time))
            .collect();
        assert_eq!(
            got,
            [
                (9, 0, 1, 110),
                (1, 0, 1, 111),
                (9, 88, 89, 112),
                (9, 0, 1, 201)
            ]
        );
        // IDLE until the first immediate, WAIT 1, EXEC 1, WAIT 88 + 1 merged.
        assert_eq!(timeline(&w), [(1, 10), (3, 1), (2, 1), (3, 90)]);
    }

    #[test]
    fn a_stall_is_folded_into_the_next_instruction() {
        let mut w = wave();
        w.stall_from(120);
        w.issue(Category::Valu, 4, 130);
        let i = w.wave.insts[0];
        assert_eq!((i.stall(), i.duration, i.time), (10, 14, 120));
        assert_eq!(timeline(&w), [(1, 20), (4, 10)]);
    }

    #[test]
    fn executing_on_is_credited_up_to_the_latest_instruction() {
        // Rule (rdna.md §4): the time since the last change of state goes to the state left,
        // for a wave that executes on up to its latest instruction: a WAVE_READY stamped before
        // it (gfx10/11's t - 1) credits nothing more, and a wave cut short is credited up to
        // its last instruction when it goes out (`settle`).
        let mut w = wave();
        w.issue(Category::Valu, 1, 110);
        w.issue(Category::Valu, 1, 120);
        w.issue(Category::Valu, 1, 130);
        w.stall_from(125);
        w.issue(Category::Valu, 4, 140);
        w.issue(Category::Valu, 1, 150);
        assert_eq!(timeline(&w), [(1, 10), (2, 20), (4, 10)]);
        w.settle();
        // IDLE 100-110, EXEC 110-130, STALL 130-140 (folded into the 140 record), EXEC 140-150.
        assert_eq!(timeline(&w), [(1, 10), (2, 20), (4, 10), (2, 10)]);
        let folded = w.wave.insts[3];
        assert_eq!(
            (folded.stall(), folded.duration, folded.time),
            (10, 14, 130)
        );
        w.settle();
        assert_eq!(timeline(&w), [(1, 10), (2, 20), (4, 10), (2, 10)]);
    }

    #[test]
    fn completion_adds_the_tokenless_endpgm() {
        let mut w = wave();
        w.issue(Category::Message, 1, 150);
        w.end(200);
        let last = w.wave.insts[1];
        assert_eq!(
            (last.category(), last.duration, last.time),
            (Category::Message as u8, 49, 151)
        );
        assert_eq!(timeline(&w), [(1, 50), (2, 50)]);
        assert!(w.has_ended());
    }
}

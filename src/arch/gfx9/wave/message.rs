//! OTHER_MSG records of one wave (`s_barrier`, `s_endpgm`): timed from the previous record's
//! end, and taken back with their timeline span when an immediate, a new instruction or the
//! wave's end shows what they were (ERRATA G2, G5; docs/timing/gfx9.md T8, T12a).

use super::{record, Gfx9Wave, MessageUndo, Timed};
use crate::records::{WaveState, WaveStateKind};

impl Gfx9Wave {
    /// A new instruction is issued while the newest record is an OTHER_MSG that no immediate
    /// followed: the message is taken back with its timeline span (docs/timing/gfx9.md T8).
    #[cold]
    pub(super) fn message_unanswered(&mut self) {
        if let Some(m) = self
            .message
            .take()
            .filter(|m| m.index + 1 == self.wave.insts.len())
        {
            self.withdraw(&m);
        }
    }

    /// Takes back the newest record, an OTHER_MSG one, with its timeline span.
    pub(super) fn withdraw(&mut self, m: &MessageUndo) {
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
    pub(super) fn wait_span(&mut self, from: i64, to: i64) {
        self.credit_until(from);
        let w = &mut self.wave;
        w.timeline.push(WaveState {
            kind: WaveStateKind::Wait as i32,
            duration: (to - from) as i32,
        });
        w.state = WaveStateKind::Exec;
        w.last_state_cycle = w.last_state_cycle.max(to);
    }

    /// The record of an OTHER_MSG INST at `t` and its timeline span (docs/timing/gfx9.md T8).
    pub(super) fn message_record(&mut self, timed: Timed, t: i64) {
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
}

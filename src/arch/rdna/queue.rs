//! The gfx10/11 reorder queue (SQTT_FORMAT §1.3): tokens wait until the clock moves on, so that
//! a WAVE_READY stamped a cycle early is handled ahead of the tokens of its time.

use super::handlers::{misc_reports, RegWrite};
use super::walk::Cursor;
use super::{Generation, RdnaDecoder};
use crate::arch::table::{TokenKind, TokenSlot};
use crate::stream::nibble::NibbleStream;
use crate::wave::Session;

/// Bound on the reorder queue: a stream whose clock never advances would otherwise queue every
/// token of the buffer (the reference does); past this the oldest token is released.
const MAX_QUEUED: usize = 1 << 12;

/// A token waiting in the gfx10/11 reorder queue (its time is the queue's).
#[derive(Clone, Copy, Debug)]
struct QueuedToken {
    kind: TokenKind,
    contents: u64,
    byte_offset: usize,
}

/// What a quietly handled token leaves in the gfx10/11 reorder queue: handling it only clears
/// the packet-loss flag, as handling any token does.
const STAND_IN: QueuedToken = QueuedToken {
    kind: TokenKind::Nop,
    contents: 0,
    byte_offset: 0,
};

/// What the gfx10/11 reorder queue holds while empty: UNKNOWN tokens are consumed by the walk,
/// never queued. A kind value instead of an `Option` makes a replace plain stores of the parts.
const NO_TOKEN: QueuedToken = QueuedToken {
    kind: TokenKind::Unknown,
    contents: 0,
    byte_offset: 0,
};

/// [`ReorderQueue::exec_time`] while no execution report is pending: older than any queue time,
/// so that one compare tells whether a report is pending and not released yet.
const NO_EXEC: i64 = i64::MIN;

/// The gfx10/11 reorder queue. It only ever holds tokens of one time (an earlier token is handled
/// at once, a later one releases the queue first). Mostly it holds the one token read last, so
/// that one has a place of its own.
pub(super) struct ReorderQueue {
    /// The time of the queued tokens (meaningless while none is queued).
    time: i64,
    /// The oldest queued token; [`NO_TOKEN`] only when nothing is queued.
    first: QueuedToken,
    /// Those after it, from `head` on (tokens before `head` were released early, when the queue
    /// reached [`MAX_QUEUED`]).
    more: Vec<QueuedToken>,
    head: usize,
    /// The time of the last ALU_EXEC or VMEM_EXEC token taken without joining the queue
    /// ([`RdnaDecoder::take_exec`]); [`NO_EXEC`] if none. The queue would still hold it while
    /// no later token is queued.
    exec_time: i64,
    /// How many queued tokens would be ahead of that report (all of its time).
    exec_ahead: usize,
}

impl Default for ReorderQueue {
    fn default() -> Self {
        Self {
            time: 0,
            first: NO_TOKEN,
            more: Vec::new(),
            head: 0,
            exec_time: NO_EXEC,
            exec_ahead: 0,
        }
    }
}

impl ReorderQueue {
    pub(super) fn clear(&mut self) {
        // No older than the next buffer's tokens: a pending execution report compares with it.
        self.time = 0;
        self.first = NO_TOKEN;
        self.more.clear();
        self.head = 0;
        self.exec_time = NO_EXEC;
    }

    /// Makes `token` the oldest queued token. Field by field: a whole-token store copied its
    /// padding bytes through the stack as well.
    #[inline(always)]
    fn hold(&mut self, token: QueuedToken) {
        self.first.kind = token.kind;
        self.first.contents = token.contents;
        self.first.byte_offset = token.byte_offset;
    }

    /// [`Self::hold`], returning the token held before.
    #[inline(always)]
    fn replace_first(&mut self, token: QueuedToken) -> QueuedToken {
        let held = self.first;
        self.hold(token);
        held
    }

    /// How many tokens are queued.
    fn len(&self) -> usize {
        usize::from(self.first.kind != TokenKind::Unknown) + self.more.len() - self.head
    }
}

impl<G: Generation> RdnaDecoder<G> {
    /// gfx10/11: an ALU_EXEC or VMEM_EXEC token of time `time`, whose handling only clears the
    /// packet-loss flag, is taken without joining the queue (true) while that flag is clear:
    /// its time and place are kept instead ([`ReorderQueue::exec_time`], `exec_ahead`), and the
    /// tokens it would have released are released by the next one. Nothing observes the
    /// difference:
    /// * until the next token joins the queue only the clock moves (TIME, plain TIMESTAMP and
    ///   execution-report tokens), which no queued token's handling reads (not on gfx10, where
    ///   a MISC token's packet loss is stamped with the clock of its release);
    /// * its release would clear a clear flag, wherever it is in the queue;
    /// * a TIMESTAMP that reports a realtime sample or a packet loss, whose handling is seen,
    ///   first puts it where it would be ([`Self::queue_pending_exec`]).
    #[inline(always)]
    fn take_exec(&mut self, kind: TokenKind, time: i64) -> bool {
        let queue = &mut self.queue;
        // A report of the pending one's time queues behind it (and the tokens after it).
        if !(G::EXEC_AT_ONCE && matches!(kind, TokenKind::AluExec | TokenKind::VmemExec))
            || G::ARCH.fields.misc_reports_packet_loss
            || self.packet_lost
            || time == queue.exec_time
        {
            return false;
        }
        queue.exec_time = time;
        // Tokens of its time queued before it; older ones it would have released.
        queue.exec_ahead = if time > queue.time { 0 } else { queue.len() };
        true
    }

    /// Before a TIMESTAMP's realtime sample or packet loss is handled: the pending execution
    /// report ([`Self::take_exec`]) goes where it would be, unless a later token would have
    /// released it already.
    #[inline(always)]
    pub(super) fn queue_pending_exec(&mut self, session: &mut Session<'_>) {
        if self.exec_report_pending() {
            self.queue_exec(session);
        }
    }

    /// Whether an execution report taken without joining the queue would still be in it: no
    /// later token has released it.
    #[inline(always)]
    pub(super) fn exec_report_pending(&self) -> bool {
        self.queue.exec_time >= self.queue.time
    }

    /// [`Self::queue_pending_exec`] of a report not older than the queue.
    #[cold]
    #[inline(never)]
    fn queue_exec(&mut self, session: &mut Session<'_>) {
        let time = std::mem::replace(&mut self.queue.exec_time, NO_EXEC);
        let report = QueuedToken {
            kind: TokenKind::AluExec,
            contents: 0,
            byte_offset: 0,
        };
        let queue = &mut self.queue;
        if time > queue.time || queue.first.kind == TokenKind::Unknown {
            // The queue holds only older tokens: it joins it as it would have when it came.
            return self.enqueue_token(session, report.kind, 0, time, 0);
        }
        let ahead = queue.exec_ahead.min(queue.len());
        if ahead == 0 {
            let second = queue.replace_first(report);
            queue.more.insert(queue.head, second);
        } else {
            queue.more.insert(queue.head + ahead - 1, report);
        }
    }

    /// gfx10/11: moves the cursor past a REG or MISC token and queues it, or handles it at once
    /// when its handling is quiet: when it touches only the registers, which neither the tokens
    /// handled outside the queue (TIME, TIMESTAMP) nor a WAVE_READY moved ahead of it read, and
    /// the packet-loss flag, which handling any token clears. Such a token leaves [`STAND_IN`] in
    /// the queue, so that its release still clears the flag. This holds while the queue holds
    /// nothing else: earlier tokens are then handled already, and later ones are handled after.
    #[inline(always)]
    pub(super) fn take_quiet(
        &mut self,
        session: &mut Session<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        window: u64,
    ) {
        let (byte_offset, time) = self.move_past(cursor, Self::shape(slot, kind), window);
        let write = RegWrite::decode(window);
        let quiet = match kind {
            TokenKind::Reg => !self.is_userdata2(&write),
            _ => misc_reports(window) == 0,
        };
        let token = QueuedToken {
            kind,
            contents: window,
            byte_offset,
        };
        let queue = &mut self.queue;
        // Releasing the stand-in (or queueing behind it) would only clear the packet-loss flag,
        // which releasing this token clears again before any token that reads it is handled:
        // this token takes its place. The usual case, tested first: one test of the held kind.
        if queue.first.kind == TokenKind::Nop && time >= queue.time && queue.more.is_empty() {
            if !quiet {
                queue.hold(token);
            }
        } else {
            let held = queue.first;
            if held.kind == TokenKind::Unknown {
                queue.hold(if quiet { STAND_IN } else { token });
            } else if held.kind == TokenKind::Misc && time > queue.time && queue.more.is_empty() {
                // The MISC tokens that report come in runs: the one held is released here, its
                // clearing of the flag left to this token's release as above.
                queue.hold(if quiet { STAND_IN } else { token });
                let held_time = queue.time;
                self.misc(session, held.contents, held_time);
            } else {
                return self.take_quiet_behind(session, kind, window, byte_offset, time, quiet);
            }
        }
        self.queue.time = time;
        if quiet && kind == TokenKind::Reg {
            self.write_registers(&write);
        }
    }

    /// gfx10/11, in the walk's fast loop: the run of WAVE_START and WAVE_END tokens from `pos`
    /// (a dispatch's waves end and start in turn; `window` holds the first one), each with the
    /// padding after it, taken as the walk would take them; returns the position after the run
    /// and the read pointer there. Out of line, one call a run: a wave start the queue releases
    /// is handled inline here ([`Self::wave_start_here`]), and the next token's kind is tested
    /// without the walk's jump on it.
    ///
    /// Exact: the run goes on only while the walk would stay in its fast loop (see
    /// [`Self::take_run`]).
    #[inline(never)]
    pub(super) fn take_wave_run(
        &mut self,
        session: &mut Session<'_>,
        stream: NibbleStream<'_>,
        mut pos: usize,
        mut window: u64,
    ) -> (usize, usize) {
        let total = stream.len();
        let mut slot = G::ARCH.tokens[(window & 0xFF) as usize];
        loop {
            let mut read_ptr = pos + 16;
            let shape = if slot.kind == TokenKind::WaveStart {
                let shape = Self::shape(slot, TokenKind::WaveStart);
                let (byte_offset, time) = self.step_past(&mut pos, shape, window);
                self.enqueue_wave_start(session, window, time, byte_offset);
                shape
            } else {
                debug_assert_eq!(slot.kind, TokenKind::WaveEnd);
                let shape = Self::shape(slot, TokenKind::WaveEnd);
                let (byte_offset, time) = self.step_past(&mut pos, shape, window);
                self.take_wave_end_here(session, window, time, byte_offset);
                shape
            };
            if G::TAKE_PADDING && shape.padding_follows(window) && read_ptr + 16 < total {
                read_ptr = pos + 16;
                pos += 1;
            }
            if !(G::TAKE_RUNS && pos + 32 < total) {
                return (pos, read_ptr);
            }
            // SAFETY: `pos + 17 <= total` by the test above.
            window = unsafe { stream.window_unchecked(pos) };
            slot = G::ARCH.tokens[(window & 0xFF) as usize];
            if slot.kind != TokenKind::WaveStart && slot.kind != TokenKind::WaveEnd {
                return (pos, read_ptr);
            }
        }
    }

    /// [`Self::enqueue`] of a WAVE_START, whose usual case (the queue holds one older token)
    /// handles an older wave start inline.
    #[inline(always)]
    fn enqueue_wave_start(
        &mut self,
        session: &mut Session<'_>,
        window: u64,
        time: i64,
        byte_offset: usize,
    ) {
        let queue = &mut self.queue;
        if !(time > queue.time && queue.more.is_empty()) {
            return self.enqueue(session, TokenKind::WaveStart, window, time, byte_offset);
        }
        let token = QueuedToken {
            kind: TokenKind::WaveStart,
            contents: window,
            byte_offset,
        };
        let older = std::mem::replace(&mut queue.time, time);
        let first = queue.replace_first(token);
        self.release_held(session, older, first);
    }

    /// [`Self::release`] of the token the queue held, with a wave start (in a run of them) or a
    /// stand-in handled inline.
    #[inline(always)]
    fn release_held(&mut self, session: &mut Session<'_>, time: i64, held: QueuedToken) {
        match held.kind {
            TokenKind::Unknown => {}
            TokenKind::WaveStart => {
                self.wave_start_here(session, held.contents, time);
                self.packet_lost = false;
            }
            TokenKind::Nop => self.packet_lost = false,
            kind => self.handle_rare(session, kind, held.contents, time, held.byte_offset),
        }
    }

    /// [`Self::release_all`] with [`Self::release_held`]: where wave tokens are taken in runs.
    /// Kept apart from it: one loop serving both (through a release function, or with
    /// `release_held` in the walk's queue too) cost the gfx1100 examples 0.4-4 % more.
    #[inline(always)]
    fn release_all_held(&mut self, session: &mut Session<'_>) {
        let time = self.queue.time;
        let first = self.queue.replace_first(NO_TOKEN);
        self.release_held(session, time, first);
        let mut next = self.queue.head;
        while let Some(&token) = self.queue.more.get(next) {
            self.release_held(session, time, token);
            next += 1;
        }
        self.queue.more.clear();
        self.queue.head = 0;
    }

    /// gfx10/11: a WAVE_END of time `time` (the cursor moved past it), handled at once where its
    /// lean path applies ([`Self::wave_end_lean`]) and the queue holds nothing but a stand-in,
    /// or older tokens it releases first: as for [`Self::take_quiet`], the tokens before it are
    /// handled already, those after it are handled after it, and the ones handled in between
    /// out of the queue (TIME, TIMESTAMP, execution reports, quiet REG and MISC tokens, a
    /// WAVE_READY moved ahead) touch neither locations nor the occupancy pool, nor do they
    /// flush it; the lean path reads no packet-loss flag. It leaves [`STAND_IN`] in the queue.
    /// Otherwise the token is queued.
    ///
    /// (Out of line, and without the cursor: a cursor passed by reference would live in memory
    /// throughout the walk.)
    #[inline(never)]
    pub(super) fn take_wave_end(
        &mut self,
        session: &mut Session<'_>,
        window: u64,
        time: i64,
        byte_offset: usize,
    ) {
        self.take_wave_end_here(session, window, time, byte_offset);
    }

    /// [`Self::take_wave_end`], inlined where wave tokens are taken in runs.
    #[inline(always)]
    fn take_wave_end_here(
        &mut self,
        session: &mut Session<'_>,
        window: u64,
        time: i64,
        byte_offset: usize,
    ) {
        let kind = TokenKind::WaveEnd;
        let queue = &self.queue;
        match queue.first.kind {
            TokenKind::Unknown => {}
            TokenKind::Nop if queue.more.is_empty() && time >= queue.time => {}
            // The token would release every older one, and wait alone.
            _ if time > queue.time => self.release_all_held(session),
            _ => return self.enqueue(session, kind, window, time, byte_offset),
        }
        if self.wave_end_lean(session, window, time) {
            self.queue.hold(STAND_IN);
            self.queue.time = time;
        } else {
            self.enqueue(session, kind, window, time, byte_offset);
        }
    }

    /// [`Self::take_quiet`] when the queue holds a token: a later token releases it when it is
    /// alone, and the new one is queued or handled quietly; otherwise the new one is queued.
    #[inline(never)]
    fn take_quiet_behind(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        contents: u64,
        byte_offset: usize,
        time: i64,
        quiet: bool,
    ) {
        // The token's parts come in registers: a `QueuedToken` argument would be built in memory
        // by every REG and MISC token, whether or not it comes here.
        let token = QueuedToken {
            kind,
            contents,
            byte_offset,
        };
        let queue = &mut self.queue;
        // The caller found a token held (not `NO_TOKEN`).
        if time > queue.time && queue.more.is_empty() {
            let held = queue.first;
            let held_time = std::mem::replace(&mut queue.time, time);
            queue.hold(if quiet { STAND_IN } else { token });
            self.release(session, held_time, held);
            if quiet && token.kind == TokenKind::Reg {
                self.write_registers(&RegWrite::decode(token.contents));
            }
        } else {
            self.enqueue(session, token.kind, token.contents, time, token.byte_offset);
        }
    }

    /// gfx10/11: WAVE_READY is stamped a cycle early and moved ahead of same-time tokens.
    #[inline(always)]
    pub(super) fn enqueue(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        w: u64,
        mut time: i64,
        byte_offset: usize,
    ) {
        if self.take_exec(kind, time) {
            return;
        }
        if kind == TokenKind::WaveReady {
            time = time.wrapping_sub(1);
        }
        self.enqueue_token(session, kind, w, time, byte_offset);
    }

    /// [`Self::enqueue`] of a token of queue time `time`.
    #[inline(always)]
    fn enqueue_token(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        w: u64,
        time: i64,
        byte_offset: usize,
    ) {
        let token = QueuedToken {
            kind,
            contents: w,
            byte_offset,
        };
        let queue = &mut self.queue;
        if time > queue.time && queue.more.is_empty() {
            // The usual case: the one queued token is older; it is handled, the new one waits.
            let older = std::mem::replace(&mut queue.time, time);
            let first = queue.replace_first(token);
            if first.kind != TokenKind::Unknown {
                self.release(session, older, first);
            }
        } else if queue.first.kind == TokenKind::Unknown {
            queue.time = time;
            queue.hold(token);
        } else if time == queue.time {
            queue.more.push(token);
            // Near the bound: a pending execution report may count too.
            if queue.more.len() - queue.head >= MAX_QUEUED - 1 {
                self.release_oldest_if_full(session);
            }
        } else if time < queue.time {
            self.release(session, time, token);
        } else {
            self.release_all(session);
            self.queue.time = time;
            self.queue.hold(token);
        }
    }

    /// The queue holds one token less than its bound in `more`: it is full if a pending
    /// execution report of its time would be queued too, or if `more` is at the bound.
    #[cold]
    #[inline(never)]
    fn release_oldest_if_full(&mut self, session: &mut Session<'_>) {
        let queue = &self.queue;
        let pending = usize::from(queue.exec_time == queue.time);
        if queue.more.len() - queue.head + pending >= MAX_QUEUED {
            self.release_oldest(session);
        }
    }

    /// The queue is over its bound: its oldest token is handled.
    fn release_oldest(&mut self, session: &mut Session<'_>) {
        let queue = &mut self.queue;
        if queue.exec_time == queue.time {
            if queue.exec_ahead == 0 {
                // The pending execution report is the oldest: released, it clears a clear flag.
                queue.exec_time = NO_EXEC;
                return;
            }
            queue.exec_ahead -= 1;
        }
        let next = queue.more[queue.head];
        queue.head += 1;
        let time = queue.time;
        // The queue holds more than one token, so `first` is one.
        let oldest = queue.replace_first(next);
        self.release(session, time, oldest);
        let queue = &mut self.queue;
        if queue.head >= MAX_QUEUED {
            queue.more.drain(..queue.head);
            queue.head = 0;
        }
    }

    /// Handles `token`, of time `time`, as it leaves the queue (or at once, when it is older
    /// than the queued tokens).
    #[inline(always)]
    fn release(&mut self, session: &mut Session<'_>, time: i64, token: QueuedToken) {
        let QueuedToken {
            kind,
            contents,
            byte_offset,
        } = token;
        self.handle(session, kind, contents, time, byte_offset);
    }

    /// Handles every queued token: near the end of the buffer, and at its end.
    #[inline(never)]
    pub(super) fn release_at_loop_end(&mut self, session: &mut Session<'_>) {
        // A pending execution report would be released too: it would clear a clear flag.
        self.queue.exec_time = NO_EXEC;
        self.release_all(session);
    }

    /// Handles every queued token, oldest first.
    #[inline(always)]
    fn release_all(&mut self, session: &mut Session<'_>) {
        // Handling a token never queues one.
        let time = self.queue.time;
        let first = self.queue.replace_first(NO_TOKEN);
        if first.kind != TokenKind::Unknown {
            self.release(session, time, first);
            let mut next = self.queue.head;
            while let Some(&token) = self.queue.more.get(next) {
                self.release(session, time, token);
                next += 1;
            }
            self.queue.more.clear();
            self.queue.head = 0;
        }
    }
}

//! The gfx10/11 reorder queue (SQTT_FORMAT §1.3): tokens wait until the clock moves on, so that
//! a WAVE_READY stamped a cycle early is handled ahead of the tokens of its time.

use super::handlers::{misc_reports, RegWrite};
use super::walk::Cursor;
use super::{Generation, RdnaDecoder};
use crate::arch::table::{TokenKind, TokenSlot};
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
}

impl Default for ReorderQueue {
    fn default() -> Self {
        Self {
            time: 0,
            first: NO_TOKEN,
            more: Vec::new(),
            head: 0,
        }
    }
}

impl ReorderQueue {
    pub(super) fn clear(&mut self) {
        self.first = NO_TOKEN;
        self.more.clear();
        self.head = 0;
    }
}

impl<G: Generation> RdnaDecoder<G> {
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
                queue.first = token;
            }
        } else {
            let held = queue.first;
            if held.kind == TokenKind::Unknown {
                queue.first = if quiet { STAND_IN } else { token };
            } else if held.kind == TokenKind::Misc && time > queue.time && queue.more.is_empty() {
                // The MISC tokens that report come in runs: the one held is released here, its
                // clearing of the flag left to this token's release as above.
                queue.first = if quiet { STAND_IN } else { token };
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
            queue.first = if quiet { STAND_IN } else { token };
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
        if kind == TokenKind::WaveReady {
            time = time.wrapping_sub(1);
        }
        let token = QueuedToken {
            kind,
            contents: w,
            byte_offset,
        };
        let queue = &mut self.queue;
        if time > queue.time && queue.more.is_empty() {
            // The usual case: the one queued token is older; it is handled, the new one waits.
            let older = std::mem::replace(&mut queue.time, time);
            let first = std::mem::replace(&mut queue.first, token);
            if first.kind != TokenKind::Unknown {
                self.release(session, older, first);
            }
        } else if queue.first.kind == TokenKind::Unknown {
            queue.time = time;
            queue.first = token;
        } else if time == queue.time {
            queue.more.push(token);
            if queue.more.len() - queue.head >= MAX_QUEUED {
                self.release_oldest(session);
            }
        } else if time < queue.time {
            self.release(session, time, token);
        } else {
            self.release_all(session);
            self.queue.time = time;
            self.queue.first = token;
        }
    }

    /// The queue is over its bound: its oldest token is handled.
    #[cold]
    #[inline(never)]
    fn release_oldest(&mut self, session: &mut Session<'_>) {
        let queue = &mut self.queue;
        let next = queue.more[queue.head];
        queue.head += 1;
        let time = queue.time;
        // The queue holds more than one token, so `first` is one.
        let oldest = std::mem::replace(&mut queue.first, next);
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
        self.release_all(session);
    }

    /// Handles every queued token, oldest first.
    #[inline(always)]
    fn release_all(&mut self, session: &mut Session<'_>) {
        // Handling a token never queues one.
        let time = self.queue.time;
        let first = std::mem::replace(&mut self.queue.first, NO_TOKEN);
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

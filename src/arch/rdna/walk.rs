//! The walk over an RDNA buffer's nibble stream: the reference's fast and tail loops, which
//! read each token's kind and length from the generation's table and hand the token on.

use super::{Generation, RdnaDecoder};
use crate::arch::table::{TokenKind, TokenSlot, TokenTable};
use crate::stream::nibble::NibbleStream;
use crate::wave::Session;

/// Distance from the end below which a token no longer joins the gfx10/11 reorder queue's
/// earlier tokens: the queue is released before it.
const QUEUE_RELEASE_NIBBLES: usize = 17;

/// Where the token walk stands: the token start and the reference's read pointer (token start
/// + 16 nibbles once read), whose distance to the end selects the fast or the tail loop.
pub(super) struct Cursor {
    pos: usize,
    read_ptr: usize,
    /// The table the next token is read with: the generation's, or on gfx12 after a
    /// WAVE_START_EXT the one that reads its extension bytes
    /// ([`crate::arch::table::RdnaArch::after_wave_start_ext`]).
    tokens: &'static TokenTable,
}

impl<G: Generation> RdnaDecoder<G> {
    /// The reference's two loops: the fast one while more than 16 nibbles remain past the read
    /// pointer, then the tail, where windows are zero-filled past the end. A function of its own
    /// for every generation: inlined into the caller, the walk's values compete with the
    /// caller's for registers.
    #[inline(never)]
    pub(super) fn walk(&mut self, session: &mut Session<'_>, data: &[u8]) {
        let stream = NibbleStream::new(data);
        let total = stream.len();
        let mut cursor = Cursor {
            pos: 0,
            read_ptr: 0,
            tokens: &G::ARCH.tokens,
        };
        let mut window = 0u64;
        // `read_ptr + 16 < total`, with the sum taken once per buffer instead of per token.
        let fast_end = total.saturating_sub(16);
        while cursor.read_ptr < fast_end {
            debug_assert!(cursor.pos <= cursor.read_ptr);
            // SAFETY: `pos + 17 <= read_ptr + 17 <= total` by the loop condition. Reading a token
            // leaves the cursor at or before the read pointer: padding moves both, other tokens
            // are at most 16 nibbles long (`token_shapes` checks the tables), and a longer NEW_PC
            // moves the read pointer with it or ends this loop.
            window = unsafe { stream.window_unchecked(cursor.pos) };
            self.read_token::<true>(session, &stream, &mut cursor, window);
        }
        // The gfx10/11 reorder queue is released once, before the first token that starts less
        // than 17 nibbles from the end, not where the fast loop ends (rdna.md §1).
        let mut released = false;
        loop {
            if !released && cursor.pos + QUEUE_RELEASE_NIBBLES >= total {
                self.release_at_loop_end(session);
                released = true;
            }
            let done = if G::ARCH.stop_at_buffer_end {
                cursor.pos >= total
            } else {
                cursor.read_ptr >= total && window == 0
            };
            if done {
                break;
            }
            window = stream.window(cursor.pos);
            self.read_token::<false>(session, &stream, &mut cursor, window);
        }
        self.release_at_loop_end(session);
    }

    /// Reads the token at the cursor (its first 64 bits are `window`) and moves past it.
    #[inline(always)]
    fn read_token<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        window: u64,
    ) {
        let arch = G::ARCH;
        cursor.read_ptr = cursor.pos + 16;
        use TokenKind as K;
        if arch.reorder_wave_ready && G::QUIET_AT_ONCE {
            // Most tokens are of these kinds: told by their pattern, the branch on them waits
            // for the window only, not for the table load too (docs/PERFORMANCE.md).
            let frequent = &arch.frequent;
            if frequent.reg.matches(window) {
                return self.take_quiet(session, cursor, frequent.reg.slot, K::Reg, window);
            }
            if frequent.time.matches(window) {
                return self.advance_clock(cursor, frequent.time.slot, window);
            }
            if frequent.misc.matches(window) {
                return self.take_quiet(session, cursor, frequent.misc.slot, K::Misc, window);
            }
        }
        if !arch.reorder_wave_ready && window & 0xF == 0 {
            // Padding, told by its zero nibble before the table load, on a branch of its own:
            // through the jump on the kind its runs cost gfx12 `profile_empty` 7 % more time
            // (indirect mispredictions).
            return take_nops::<FAST_LOOP>(stream, cursor, window);
        }
        let byte = (window & 0xFF) as usize;
        match &arch.after_wave_start_ext {
            None => {
                self.take_token::<FAST_LOOP>(session, stream, cursor, arch.tokens[byte], window);
            }
            Some(_) => {
                // A byte that ends a WAVE_START_EXT's extension bytes is read again with the
                // main table: a second pass of the jump on the kind, which every other token
                // leaves at once.
                let mut slot = cursor.tokens[byte];
                while self.take_token::<FAST_LOOP>(session, stream, cursor, slot, window) {
                    cursor.tokens = &arch.tokens;
                    slot = arch.tokens[byte];
                }
            }
        }
    }

    /// Takes the token at the cursor, whose table slot is `slot`. True where the byte ends a
    /// WAVE_START_EXT's extension bytes instead: it is to be read again with the main table.
    /// (Inlined, the jump on the kind then leads straight on for every other token.)
    #[inline(always)]
    fn take_token<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        window: u64,
    ) -> bool {
        use TokenKind as K;
        let arch = G::ARCH;
        let pos = cursor.pos;
        let total = stream.len();
        // Where tokens are handled as they come, the frequent kinds have arms of their own, with
        // the token's length a constant: the walk then moves on by a predicted branch instead of
        // waiting for the table load. Through the gfx10/11 reorder queue, a token is handled when
        // the next one comes, by a branch on its kind: an arm by kind there adds a second branch
        // on the kind, which pays only for the instructions and their execution reports (a
        // constant shape and delta, `take_instructions`; IMM_ONE, WAVE_READY and IMMEDIATE arms
        // cost more than they saved, docs/PERFORMANCE.md). REG and MISC tokens are handled at
        // once there too, most of them (`take_quiet`).
        let by_kind = !arch.reorder_wave_ready;
        match slot.kind {
            K::ExtensionEnd if arch.after_wave_start_ext.is_some() => return true,
            K::Nop => take_nops::<FAST_LOOP>(stream, cursor, window),
            K::Unknown => cursor.pos += Self::shape(slot, K::Unknown).nibbles(),
            K::Time => self.advance_clock(cursor, Self::shape(slot, K::Time), window),
            K::Timestamp => {
                // Most TIMESTAMPs only advance the shader clock: that is handled here, the
                // realtime samples and packet losses out of line.
                match arch.fields.timestamp.plain_delta(window) {
                    Some(delta) => self.clock = self.clock.wrapping_add(delta),
                    None => self.timestamp::<FAST_LOOP>(session, window),
                }
                cursor.pos += Self::shape(slot, K::Timestamp).nibbles();
            }
            K::NewPc => {
                let mut contents = window;
                let skip = arch.fields.new_pc_skip;
                if skip > 0 && cursor.read_ptr + 16 < total {
                    contents = stream.window(pos + skip);
                    cursor.read_ptr += skip;
                }
                let shape = Self::shape(slot, K::NewPc);
                self.handle_or_queue(session, cursor, shape, K::NewPc, window, contents);
            }
            K::Reg if by_kind => {
                self.take_reg_run::<FAST_LOOP>(session, stream, cursor, slot, window)
            }
            K::Misc if by_kind => {
                self.take_run::<FAST_LOOP>(session, stream, cursor, slot, K::Misc, window)
            }
            K::Reg if G::QUIET_AT_ONCE => self.take_quiet(session, cursor, slot, K::Reg, window),
            K::Misc if G::QUIET_AT_ONCE => self.take_quiet(session, cursor, slot, K::Misc, window),
            K::Inst => {
                self.take_instructions::<FAST_LOOP>(session, stream, cursor, slot, K::Inst, window)
            }
            K::ValuInst => self.take_instructions::<FAST_LOOP>(
                session,
                stream,
                cursor,
                slot,
                K::ValuInst,
                window,
            ),
            K::ImmOne if by_kind => {
                self.take::<FAST_LOOP>(session, stream, cursor, slot, K::ImmOne, window)
            }
            K::AluExec => self.take::<FAST_LOOP>(session, stream, cursor, slot, K::AluExec, window),
            K::VmemExec => {
                self.take::<FAST_LOOP>(session, stream, cursor, slot, K::VmemExec, window)
            }
            K::Immediate if by_kind => {
                self.take::<FAST_LOOP>(session, stream, cursor, slot, K::Immediate, window)
            }
            K::WaveReady if by_kind => {
                self.take::<FAST_LOOP>(session, stream, cursor, slot, K::WaveReady, window)
            }
            K::WaveStart if by_kind => {
                self.take_run::<FAST_LOOP>(session, stream, cursor, slot, K::WaveStart, window)
            }
            K::WaveEnd if by_kind => {
                self.take_run::<FAST_LOOP>(session, stream, cursor, slot, K::WaveEnd, window)
            }
            K::WaveStart | K::WaveEnd
                if FAST_LOOP && arch.reorder_wave_ready && G::QUIET_AT_ONCE =>
            {
                (cursor.pos, cursor.read_ptr) = self.take_wave_run(session, *stream, pos, window);
            }
            K::WaveStartExt if arch.after_wave_start_ext.is_some() => {
                // Its handling does not read the table: the bytes after it are read with theirs.
                if let Some(after) = &arch.after_wave_start_ext {
                    cursor.tokens = after;
                }
                self.take_other::<FAST_LOOP>(session, cursor, slot, K::WaveStartExt, window, total);
            }
            // Every kind named: the jump on the kind then needs no range test first.
            kind @ (K::WaveAlloc
            | K::ShaderData
            | K::ShaderDataShort
            | K::Header
            | K::UtilCounter
            | K::ExtensionEnd
            | K::RegInit
            | K::Event
            | K::EventSync
            | K::ExecPopcount1
            | K::ExecPopcount3
            | K::LdsConfig
            | K::MediumTime) => {
                self.take_other::<FAST_LOOP>(session, cursor, slot, kind, window, total)
            }
            kind => self.take_other::<FAST_LOOP>(session, cursor, slot, kind, window, total),
        }
        false
    }

    /// Takes a token of a kind without an arm of its own (`slot`'s): moves past it, handles or
    /// queues it, then takes the padding after it.
    #[inline(always)]
    fn take_other<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        window: u64,
        total: usize,
    ) {
        if G::ARCH.reorder_wave_ready && G::QUIET_AT_ONCE && kind == TokenKind::WaveEnd {
            let (byte_offset, time) = self.move_past(cursor, slot, window);
            self.take_wave_end(session, window, time, byte_offset);
        } else {
            self.handle_or_queue(session, cursor, slot, kind, window, window);
        }
        // The kind is known at run time only here: testing it would cost more than the padding
        // test it saves.
        if FAST_LOOP && G::TAKE_PADDING {
            take_padding(cursor, total, window, slot);
        }
    }

    /// [`Self::take`] for a kind whose tokens come in runs: MISC reports, the wave starts and
    /// ends of a dispatch (which also follow each other: a run of either takes the other's tokens
    /// too, [`run_partner`]; a dispatch's register writes have [`Self::take_reg_run`]). In the
    /// fast loop the rest of the run is taken here, by a test on the next token's kind instead
    /// of the walk's jump on it.
    ///
    /// Exact: the walk would take the same tokens in its fast loop. It stays there while the
    /// read pointer, set 16 nibbles past the previous token's start, is more than 16 nibbles
    /// from the end; the run goes on only while that holds of the token about to be taken, which
    /// starts later. After a token other than WAVE_START_EXT no extension bytes follow.
    #[inline(always)]
    fn take_run<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        window: u64,
    ) {
        debug_assert!(kind != TokenKind::WaveStartExt && kind != TokenKind::Nop);
        self.take::<FAST_LOOP>(session, stream, cursor, slot, kind, window);
        if !(FAST_LOOP && G::TAKE_RUNS) {
            return;
        }
        let partner = run_partner(kind);
        while cursor.pos + 32 < stream.len() {
            // SAFETY: `pos + 17 <= total` by the loop condition.
            let window = unsafe { stream.window_unchecked(cursor.pos) };
            let slot = G::ARCH.tokens[(window & 0xFF) as usize];
            if slot.kind == kind {
                cursor.read_ptr = cursor.pos + 16;
                self.take::<FAST_LOOP>(session, stream, cursor, slot, kind, window);
                continue;
            }
            match partner {
                Some(partner) if slot.kind == partner => {
                    cursor.read_ptr = cursor.pos + 16;
                    self.take::<FAST_LOOP>(session, stream, cursor, slot, partner, window);
                }
                _ => break,
            }
        }
    }

    /// [`Self::take_run`] for REG tokens, a dispatch's register writes, most of which do
    /// nothing: after the first, in a loop that keeps the clock in a register and hands on only
    /// the writes that matter ([`Self::reg_matters`]), whose handling moves no clock. Exact as
    /// `take_run` is; the packet-loss flag the first one clears stays clear.
    #[inline(always)]
    fn take_reg_run<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        window: u64,
    ) {
        use TokenKind as K;
        self.take::<FAST_LOOP>(session, stream, cursor, slot, K::Reg, window);
        if !(FAST_LOOP && G::TAKE_RUNS) {
            return;
        }
        let mut pos = cursor.pos;
        let mut last = None;
        let mut clock = self.clock;
        while pos + 32 < stream.len() {
            // SAFETY: `pos + 17 <= total` by the loop condition.
            let window = unsafe { stream.window_unchecked(pos) };
            let slot = G::ARCH.tokens[(window & 0xFF) as usize];
            if slot.kind != K::Reg {
                break;
            }
            let shape = Self::shape(slot, K::Reg);
            clock = clock.wrapping_add(shape.delta(window));
            last = Some(pos);
            pos += shape.nibbles();
            if self.reg_matters(window) {
                self.clock = clock;
                self.reg(session, window, clock as i64);
            }
        }
        self.clock = clock;
        if let Some(last) = last {
            cursor.pos = pos;
            cursor.read_ptr = last + 16;
        }
    }

    /// A VALU_INST or (gfx12) INST (`kind`), and the execution report that most often follows it
    /// after a NOP (a gemm's instructions and their ALU_EXEC or VMEM_EXEC), both in its window:
    /// the report is taken with it where the fast loop would take the NOP and the report next
    /// (see [`take_padding`]), without the walk's table load and jump on the kind. A token of
    /// `kind` after the report, or right after the NOP, starts the same again, as
    /// [`Self::take_run`] does. Through the gfx10/11 reorder queue both are queued as the walk
    /// would queue them.
    #[inline(always)]
    fn take_instructions<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        mut window: u64,
    ) {
        let shape = Self::shape(slot, kind);
        let frequent = &G::ARCH.frequent;
        let same = if kind == TokenKind::ValuInst {
            frequent.valu
        } else {
            frequent.inst
        };
        loop {
            self.handle_or_queue(session, cursor, shape, kind, window, window);
            if !(FAST_LOOP && G::TAKE_PADDING) {
                return;
            }
            let next = window >> (shape.bits + 4);
            // The NOP's read pointer is 16 past it (`pos`): the loop takes the token after it
            // while that is more than 16 nibbles from the end.
            if !(shape.padding_follows(window) && cursor.pos + 32 < stream.len()) {
                return take_padding(cursor, stream.len(), window, shape);
            }
            if frequent.exec.matches(next) {
                // Either report kind's handling is the same (none), and so is its shape.
                cursor.pos += 1;
                cursor.read_ptr = cursor.pos + 16;
                let (report, report_kind) = (frequent.exec.slot, TokenKind::AluExec);
                self.handle_or_queue(session, cursor, report, report_kind, next, next);
                // A token of `kind` next (the gemm's next instruction) is taken here too, as the
                // loop would: its read pointer, 16 past the report's, is more than 16 from the end.
                if !(G::TAKE_RUNS && cursor.pos + 32 < stream.len()) {
                    return;
                }
            } else if G::TAKE_RUNS && same.matches(next) {
                cursor.pos += 1;
            } else {
                return take_padding(cursor, stream.len(), window, shape);
            }
            // SAFETY: `pos + 17 <= total` by the test above.
            window = unsafe { stream.window_unchecked(cursor.pos) };
            if !same.matches(window) {
                return;
            }
            cursor.read_ptr = cursor.pos + 16;
        }
    }

    /// The shape of `kind`'s tokens: a constant where every slot of the kind shares it.
    #[inline(always)]
    pub(super) fn shape(slot: TokenSlot, kind: TokenKind) -> TokenSlot {
        G::ARCH.shapes[kind as usize].unwrap_or(slot)
    }

    /// Takes a TIME token, which only advances the clock: by its delta and the 4 cycles of the
    /// token.
    #[inline(always)]
    fn advance_clock(&mut self, cursor: &mut Cursor, shape: TokenSlot, window: u64) {
        self.clock = self.clock.wrapping_add(shape.delta(window) + 4);
        cursor.pos += shape.nibbles();
    }

    /// Takes a token of `kind`, whose table slot is `slot`: moves past it and handles or queues
    /// it ([`Self::handle_or_queue`]), then takes the padding after it ([`take_padding`]).
    #[inline(always)]
    fn take<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        window: u64,
    ) {
        let shape = Self::shape(slot, kind);
        self.handle_or_queue(session, cursor, shape, kind, window, window);
        if FAST_LOOP && G::TAKE_PADDING && padding_may_follow(kind) {
            take_padding(cursor, stream.len(), window, shape);
        }
    }

    /// Moves the cursor past the token of `kind` (with `shape`), then handles the token now, or
    /// queues it on gfx10/11. The walk's next read waits for nothing the handling does.
    #[inline(always)]
    fn handle_or_queue(
        &mut self,
        session: &mut Session<'_>,
        cursor: &mut Cursor,
        shape: TokenSlot,
        kind: TokenKind,
        window: u64,
        contents: u64,
    ) {
        let (byte_offset, time) = self.move_past(cursor, shape, window);
        if G::ARCH.reorder_wave_ready {
            self.enqueue(session, kind, contents, time, byte_offset);
        } else {
            self.handle_now(session, kind, contents, time, byte_offset);
        }
    }

    /// Moves the cursor past a token of `shape` and the clock by its delta; returns the token's
    /// byte offset and time.
    #[inline(always)]
    pub(super) fn move_past(
        &mut self,
        cursor: &mut Cursor,
        shape: TokenSlot,
        window: u64,
    ) -> (usize, i64) {
        self.step_past(&mut cursor.pos, shape, window)
    }

    /// [`Self::move_past`] of a position held apart from the cursor.
    #[inline(always)]
    pub(super) fn step_past(
        &mut self,
        pos: &mut usize,
        shape: TokenSlot,
        window: u64,
    ) -> (usize, i64) {
        let byte_offset = *pos / 2;
        *pos += shape.nibbles();
        self.clock = self.clock.wrapping_add(shape.delta(window));
        (byte_offset, self.clock as i64)
    }

    /// gfx12: handles a token as soon as it is read: the frequent kinds here, the rare ones out
    /// of line, so that the walk keeps fewer values across calls.
    #[inline(always)]
    fn handle_now(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        w: u64,
        t: i64,
        byte_offset: usize,
    ) {
        match kind {
            TokenKind::Reg
            | TokenKind::Misc
            | TokenKind::Inst
            | TokenKind::ValuInst
            | TokenKind::ImmOne
            | TokenKind::AluExec
            | TokenKind::VmemExec => self.handle(session, kind, w, t, byte_offset),
            // Inlined: their lean paths cost the call's overhead again (gfx12 gemms: the waves
            // of a dispatch).
            TokenKind::WaveStart => {
                self.wave_start_here(session, w, t);
                self.packet_lost = false;
            }
            TokenKind::WaveEnd => {
                self.wave_end_here(session, w, t);
                self.packet_lost = false;
            }
            TokenKind::WaveReady => {
                self.wave_ready(w, t);
                self.packet_lost = false;
            }
            _ => self.handle_rare(session, kind, w, t, byte_offset),
        }
    }

    /// The kinds that are rare in a stream.
    #[inline(never)]
    pub(super) fn handle_rare(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        w: u64,
        t: i64,
        byte_offset: usize,
    ) {
        self.handle(session, kind, w, t, byte_offset);
    }
}

/// Takes the NOP at the cursor (whose first 64 bits are `window`). Padding comes in long runs
/// of zero nibbles, each one a NOP, taken at once as long as the walk stays in the fast loop
/// (read pointer + 16 < total).
#[inline(always)]
fn take_nops<const FAST_LOOP: bool>(stream: &NibbleStream<'_>, cursor: &mut Cursor, window: u64) {
    let pos = cursor.pos;
    let zeros = (window.trailing_zeros() / 4) as usize;
    let limit = stream.len().saturating_sub(pos + 32);
    let step = if !FAST_LOOP || limit == 0 {
        1
    } else if zeros < 16 {
        zeros.min(limit)
    } else {
        stream.zero_run(pos, limit)
    };
    cursor.read_ptr = pos + step + 15;
    cursor.pos += step;
}

/// The kind whose tokens a run of `kind` ([`RdnaDecoder::take_run`]) takes too: a dispatch's
/// waves end and start in turn (a slot's wave ends, the next starts in it), so the run of either
/// goes on over the other's.
#[inline(always)]
const fn run_partner(kind: TokenKind) -> Option<TokenKind> {
    match kind {
        TokenKind::WaveStart => Some(TokenKind::WaveEnd),
        TokenKind::WaveEnd => Some(TokenKind::WaveStart),
        _ => None,
    }
}

/// The kinds a NOP often follows in real captures (the tokens of a wave's instructions and
/// states): only after them is [`take_padding`] worth its test where the kind is a constant.
#[inline(always)]
const fn padding_may_follow(kind: TokenKind) -> bool {
    use TokenKind as K;
    matches!(
        kind,
        K::Inst | K::ValuInst | K::ImmOne | K::Immediate | K::WaveReady | K::WaveEnd
    )
}

/// A zero nibble right after a token of `shape` (whose first 64 bits are `window`) is a NOP:
/// padding, which follows most wave tokens in real captures. Where the fast loop would take it next (its
/// read pointer more than 16 nibbles from the end), it is taken here, as that loop's NOP step
/// would (one nibble, the read pointer 16 past it), without the walk's jump on the kind.
#[inline(always)]
pub(super) fn take_padding(cursor: &mut Cursor, total: usize, window: u64, shape: TokenSlot) {
    if shape.padding_follows(window) && cursor.read_ptr + 16 < total {
        cursor.read_ptr = cursor.pos + 16;
        cursor.pos += 1;
    }
}

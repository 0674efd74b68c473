//! gfx10.3 / gfx11 / gfx12 (RDNA): the shared decode driver for the nibble stream.
//!
//! The token reader follows the reference's two loops (SQTT_FORMAT §1.3–1.4): a fast loop while
//! more than 64 bits remain past the read pointer, then a tail loop fed with zero nibbles. The
//! per-generation differences are data in [`RdnaArch`] (`gfx10.rs`, `gfx11.rs`, `gfx12.rs`).

use super::table::{
    CycleScale, InstEffect, RdnaArch, TimestampFields, TokenKind, TokenSlot, UnitFields,
};
use super::{gfx10, gfx11, gfx12};
use crate::arch::locations::StampedTable;
use crate::arch::registers::{dispatcher_index, Registers, DISPATCHERS};
use crate::arch::userdata::{UserdataEvent, USERDATA_2};
use crate::arch::DecodeError;
use crate::records::RecordKind;
use crate::records::{
    Dispatch, Event, EventKind, EventPayload, InstOtherSimd, Occupancy, OccupancyFlags, Pc,
    Realtime, ShaderData, WaveStateKind, EVENT_FLAG_BOP, EVENT_FLAG_PER_PIPE,
};
use crate::sink::{Delivery, Record, POOL_LIMIT};
use crate::spare::{Recycle, Slot, Spare};
use crate::stream::nibble::NibbleStream;
use crate::wave::Session;
use crate::wave::{emit_wave, StitchRules, WaveBuilder, WaveIdentity};

/// Out of line, so that the RDNA decoders leave the caller's register allocation (and the gfx9
/// walk inlined there) alone.
#[inline(never)]
pub fn decode(session: &mut Session<'_>, version: u8, data: &[u8]) -> Result<(), DecodeError> {
    match version {
        1 | 2 => RdnaDecoder::<Gfx10>::for_buffer(version).decode(session, data),
        3 => RdnaDecoder::<Gfx11>::for_buffer(version).decode(session, data),
        4 => RdnaDecoder::<Gfx12>::for_buffer(version).decode(session, data),
        _ => return Err(DecodeError::UnsupportedVersion(version)),
    }
    Ok(())
}

/// One RDNA generation's tables, known at compile time so that the decoder is specialised for
/// it: the per-generation switches in [`RdnaArch`] then cost nothing per token.
trait Generation: Sized + 'static {
    const ARCH: &'static RdnaArch;
    /// The thread's decoder of this generation, kept between parse calls ([`spare_decoder!`]).
    fn spare() -> &'static Slot<RdnaDecoder<Self>>;
    /// gfx10/11: REG and MISC tokens whose handling is quiet are handled at once instead of
    /// through the reorder queue ([`RdnaDecoder::take_quiet`]); the tests turn this off to
    /// check that both ways decode alike.
    const QUIET_AT_ONCE: bool = true;
    /// gfx12: the rest of a run of tokens of one kind is taken without the walk's jump on the
    /// kind ([`RdnaDecoder::take_kind_run`]); the tests turn this off to check that both ways
    /// decode alike.
    const RUNS: bool = true;
}

struct Gfx10;
struct Gfx11;
struct Gfx12;

/// A generation's thread-local decoder slot (a `thread_local!` cannot be generic).
macro_rules! spare_decoder {
    ($generation:ty) => {
        fn spare() -> &'static Slot<RdnaDecoder<$generation>> {
            thread_local! {
                static SPARE: std::cell::Cell<Option<Box<RdnaDecoder<$generation>>>> =
                    const { std::cell::Cell::new(None) };
            }
            &SPARE
        }
    };
}

impl Generation for Gfx10 {
    const ARCH: &'static RdnaArch = &gfx10::ARCH;
    spare_decoder!(Gfx10);
}
impl Generation for Gfx11 {
    const ARCH: &'static RdnaArch = &gfx11::ARCH;
    spare_decoder!(Gfx11);
}
impl Generation for Gfx12 {
    const ARCH: &'static RdnaArch = &gfx12::ARCH;
    spare_decoder!(Gfx12);
}

/// WAVE_START counts in this range (one per bit of the two masks) are context save/restore
/// traffic, not new waves; counts 76-89 start waves like any other (rdna.md §4.6).
const CONTEXT_COUNTS: std::ops::Range<u64> = 66..76;
const CONTEXT_SAVE_MASK: u32 = 0b00_0011_0011;
const CONTEXT_RESTORE_MASK: u32 = 0b11_1100_1100;

/// Bound on the reorder queue: a stream whose clock never advances would otherwise queue every
/// token of the buffer (the reference does); past this the oldest token is released.
const MAX_PENDING: usize = 1 << 12;

/// Wave slots per SIMD that a 5-bit wave id can name.
const SLOTS: usize = 32;

/// A token waiting in the gfx10/11 reorder queue (its time is the queue's).
#[derive(Clone, Copy, Debug)]
struct Token {
    kind: TokenKind,
    contents: u64,
    byte_offset: usize,
}

/// What a quietly handled token leaves in the gfx10/11 reorder queue: handling it only clears
/// the packet-loss flag, as handling any token does.
const STAND_IN: Token = Token {
    kind: TokenKind::Nop,
    contents: 0,
    byte_offset: 0,
};

/// What the gfx10/11 reorder queue holds while empty: UNKNOWN tokens are consumed by the walk,
/// never queued. A kind value instead of an `Option` makes a replace plain stores of the parts.
const NO_TOKEN: Token = Token {
    kind: TokenKind::Unknown,
    contents: 0,
    byte_offset: 0,
};

/// The traced unit (HEADER DSA/DWGP/DSIMD) and its rates.
#[derive(Clone, Copy, Debug, Default)]
struct Target {
    wgp: u64,
    /// The traced SIMD's locations are `unit << 5 ..`: one compare tells a token's wave is traced.
    unit: usize,
    dprate: u32,
    derate: u32,
}

/// Whether a wave location (sa, wgp, simd, slot) is running, and the PC it started at.
#[derive(Clone, Copy, Debug, Default)]
struct Location {
    running: bool,
    pc: Pc,
}

fn location_index(sa: u64, wgp: u64, simd: u64, wave: u64) -> usize {
    ((sa & 1) << 11 | (wgp & 0xF) << 7 | (simd & 3) << 5 | (wave & 0x1F)) as usize
}

/// Waves of the traced SIMD, by slot, and the order in which completed ones are emitted.
#[derive(Default)]
struct TargetWaves {
    /// Pool index of the wave in each slot.
    slots: [Option<u8>; SLOTS],
    /// A bit per slot that holds a wave, so that emitting a wave and the end of a buffer visit
    /// only those slots.
    occupied: u32,
    pool: Vec<WaveBuilder>,
    free: Vec<usize>,
    /// Unfinished waves whose slot a new wave took, with their slot: the reference keeps them
    /// until the end of the buffer, where they go out with the slot's last wave.
    abandoned: Vec<(usize, usize)>,
}

/// At most this many instructions' worth of wave buffers stay with the thread between buffers.
const KEPT_INSTS: usize = 1 << 18;

impl TargetWaves {
    /// No wave in any slot; the roomiest builders are kept (with their buffers) for new waves.
    fn reset(&mut self) {
        self.pool
            .sort_unstable_by_key(|w| std::cmp::Reverse(w.insts.capacity()));
        let mut kept = 0;
        self.pool.retain(|w| {
            let fits = kept + w.insts.capacity() <= KEPT_INSTS;
            kept += if fits { w.insts.capacity() } else { 0 };
            fits
        });
        self.slots = [None; SLOTS];
        self.occupied = 0;
        self.free.clear();
        // Builders are taken from the back: the roomiest first.
        self.free.extend((0..self.pool.len()).rev());
        self.abandoned.clear();
    }

    fn index(&self, wave: u64) -> Option<usize> {
        self.slots
            .get(wave as usize)
            .copied()
            .flatten()
            .map(usize::from)
    }

    fn live(&mut self, wave: u64) -> Option<&mut WaveBuilder> {
        let index = self.index(wave)?;
        self.pool.get_mut(index).filter(|w| !w.complete)
    }

    fn emit(&mut self, session: &mut Session<'_>, index: usize, rules: &StitchRules) {
        emit_wave(session, &mut self.pool[index], rules);
        let mut occupied = self.occupied;
        while occupied != 0 {
            let slot = occupied.trailing_zeros() as usize;
            occupied &= occupied - 1;
            if self.slots[slot].map(usize::from) == Some(index) {
                self.slots[slot] = None;
                self.occupied &= !(1 << slot);
            }
        }
        self.free.push(index);
    }

    /// A new wave in `slot`. A wave the slot still holds has not ended (an ended wave was emitted
    /// at its WAVE_END): it is kept until the end of the buffer.
    fn start(&mut self, slot: u64) -> Option<&mut WaveBuilder> {
        if let Some(old) = self.index(slot) {
            self.abandoned.push((slot as usize, old));
        }
        let bit = 1u32.checked_shl(slot as u32)?;
        let slot = self.slots.get_mut(slot as usize)?;
        let index = self.free.pop().unwrap_or_else(|| {
            self.pool.push(WaveBuilder::default());
            self.pool.len() - 1
        });
        *slot = Some(u8::try_from(index).ok()?);
        self.occupied |= bit;
        self.pool.get_mut(index)
    }

    /// Completes the wave in `wave`'s slot and emits it at once, so that completed waves go out
    /// in WAVE_END order (ERRATA G1), between the pooled batches handed over while the buffer is
    /// read (rdna.md §4.4); false when the slot holds no running wave (none started in this
    /// buffer, or the last one has ended).
    fn complete(
        &mut self,
        session: &mut Session<'_>,
        wave: u64,
        t: i64,
        rules: &StitchRules,
    ) -> bool {
        match self.index(wave) {
            Some(index) => {
                self.pool[index].rdna_complete(t);
                self.emit(session, index, rules);
                true
            }
            None => false,
        }
    }

    /// End of buffer, after the pooled batches: the waves the stream cut short, by slot, each
    /// slot's abandoned ones first.
    fn finish_unfinished(&mut self, session: &mut Session<'_>, rules: &StitchRules) {
        let abandoned = std::mem::take(&mut self.abandoned);
        let mut slots = abandoned
            .iter()
            .fold(self.occupied, |mask, &(slot, _)| mask | 1 << slot);
        while slots != 0 {
            let slot = slots.trailing_zeros() as usize;
            slots &= slots - 1;
            for &(_, index) in abandoned.iter().filter(|(s, _)| *s == slot) {
                self.emit(session, index, rules);
            }
            if let Some(index) = self.index(slot as u64) {
                self.emit(session, index, rules);
            }
        }
    }
}

/// A REG token (SQTT_FORMAT §1.5): a register write by dispatcher `(me & 1, pipe)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegWrite {
    pub me: u8,
    pub pipe: u8,
    /// The address is relative to the compute register block.
    pub compute: bool,
    pub address: u64,
    pub data: u32,
}

impl RegWrite {
    pub fn decode(w: u64) -> Self {
        RegWrite {
            me: ((w >> 9) & 1) as u8,
            pipe: ((w >> 7) & 3) as u8,
            compute: (w >> 15) & 1 != 0,
            address: (w >> 16) & 0xFFFF,
            data: (w >> 32) as u32,
        }
    }

    /// The 64-bit REG token for this write (`1001` pattern, no time delta).
    pub fn encode(&self) -> u64 {
        0b1001
            | u64::from(self.pipe & 3) << 7
            | u64::from(self.me & 1) << 9
            | u64::from(self.compute) << 15
            | (self.address & 0xFFFF) << 16
            | u64::from(self.data) << 32
    }
}

/// MISC bit 19, in [`misc_reports`]' terms: a context save begins.
const SAVE_CONTEXT: u64 = 1 << 3;

/// MISC bits 16..24 that report something (bit 18 never does).
fn misc_reports(w: u64) -> u64 {
    (w >> 16) & 0xFB
}

/// REG_INIT of type 2 (DISPATCH_INITIATOR) with the shader-enable bit: the dispatcher
/// `(me & 1, pipe)` that started a dispatch.
pub fn dispatch_initiator(w: u64) -> Option<(u8, u8)> {
    let kind = (w >> 18) & 3;
    let data = (w >> 20) as u32;
    (kind == 2 && data & 1 != 0).then_some((((w >> 16) & 1) as u8, ((w >> 14) & 3) as u8))
}

/// The EVENT record of an EVENT token whose id is reported (SQTT_FORMAT §2.5); time and byte
/// offset are left 0.
#[inline]
pub fn event_record(w: u64) -> Option<Event> {
    let kind = match (w >> 18) & 0x3F {
        0x07 => EventKind::CsPartialFlush,
        0x04 | 0x06 | 0x14 | 0x16 => EventKind::CacheFlush,
        0x28 => EventKind::BottomOfPipeTs,
        0x36 => EventKind::TtFlush,
        _ => return None,
    };
    let bop = if (w >> 11) & 1 != 0 {
        EVENT_FLAG_BOP
    } else {
        0
    };
    Some(Event {
        size: std::mem::size_of::<Event>() as u64,
        kind: kind as u32,
        me_id: ((w >> 14) & 1) as u8,
        pipe_id: ((w >> 16) & 3) as u8,
        flags: EVENT_FLAG_PER_PIPE | bop,
        ..Event::default()
    })
}

struct RdnaDecoder<G: Generation> {
    version: u8,
    /// The shader clock: the sum of every token's delta since the buffer start.
    clock: u64,
    target: Target,
    rules: StitchRules,
    registers: Registers,
    /// Per dispatcher, the last program a wave started with and its kernel entry translated to
    /// its code object: a dispatch's waves (hundreds on a gemm trace) share it. A code object
    /// load or unload makes every entry's program differ from its dispatcher's.
    start_pcs: [(u64, Pc); DISPATCHERS],
    /// By [`location_index`]: every wave slot of the shader engine.
    locations: StampedTable<Location>,
    waves: TargetWaves,
    /// HEADER bit 43 (version 4+): the trace streams through a double buffer, so occupancy is
    /// handed over in batches as it accumulates instead of once at the end of the buffer.
    double_buffer: bool,
    /// Packets were lost since the previous parsed token.
    packet_lost: bool,
    /// gfx10/11 reorder queue (SQTT_FORMAT §1.3).
    pending: PendingTokens,
    generation: std::marker::PhantomData<G>,
}

/// Where the token walk stands: the token start and the reference's read pointer (token start
/// + 16 nibbles once read), whose distance to the end selects the fast or the tail loop.
struct Cursor {
    pos: usize,
    read_ptr: usize,
    /// gfx12: extension bytes of a WAVE_START_EXT may follow.
    ext: bool,
}

/// The gfx10/11 reorder queue. It only ever holds tokens of one time (an earlier token is handled
/// at once, a later one releases the queue first). Mostly it holds the one token read last, so
/// that one has a place of its own.
struct PendingTokens {
    /// The time of the queued tokens (meaningless while none is queued).
    time: i64,
    /// The oldest queued token; [`NO_TOKEN`] only when nothing is queued.
    first: Token,
    /// Those after it, from `head` on (tokens before `head` were released early, when the queue
    /// reached [`MAX_PENDING`]).
    more: Vec<Token>,
    head: usize,
}

impl Default for PendingTokens {
    fn default() -> Self {
        Self {
            time: 0,
            first: NO_TOKEN,
            more: Vec::new(),
            head: 0,
        }
    }
}

impl PendingTokens {
    fn clear(&mut self) {
        self.first = NO_TOKEN;
        self.more.clear();
        self.head = 0;
    }
}

/// A thread keeps one decoder per generation between its parse calls (rocprofv3 makes one per
/// SE buffer): its location table, wave builders and queue are not rebuilt from empty, and the
/// decoder is not moved, built or torn down per call.
impl<G: Generation> Default for RdnaDecoder<G> {
    fn default() -> Self {
        RdnaDecoder {
            version: 0,
            clock: 0,
            target: Target::default(),
            rules: StitchRules::rdna(G::ARCH.gfx12_stitch),
            registers: Registers::default(),
            start_pcs: [(0, Pc::NONE); DISPATCHERS],
            locations: StampedTable::new(1 << 12),
            waves: TargetWaves::default(),
            double_buffer: false,
            packet_lost: false,
            pending: PendingTokens::default(),
            generation: std::marker::PhantomData,
        }
    }
}

impl<G: Generation> Recycle for RdnaDecoder<G> {
    fn recycle(&mut self) -> bool {
        self.locations.reset();
        self.waves.reset();
        self.pending.clear();
        true
    }
}

impl<G: Generation> RdnaDecoder<G> {
    /// The thread's decoder, set up for a buffer of this header version.
    fn for_buffer(version: u8) -> Spare<Self> {
        let mut decoder = Spare::take(G::spare());
        decoder.begin(version);
        decoder
    }

    /// The state of one buffer's start; the tables were emptied by [`Recycle::recycle`]. Every
    /// field is named, so that a new one cannot be left out.
    fn begin(&mut self, version: u8) {
        let RdnaDecoder {
            version: this_version,
            clock,
            target,
            rules: _,
            registers,
            start_pcs,
            locations: _,
            waves: _,
            double_buffer,
            packet_lost,
            pending: _,
            generation: _,
        } = self;
        *this_version = version;
        *clock = 0;
        *target = Target {
            dprate: 1,
            derate: 1,
            ..Target::default()
        };
        *registers = Registers::default();
        *start_pcs = [(0, Pc::NONE); DISPATCHERS];
        *double_buffer = false;
        *packet_lost = false;
    }

    fn decode(&mut self, session: &mut Session<'_>, data: &[u8]) {
        self.run(session, data);
        self.finish(session);
    }

    /// The reference's two loops: the fast one while more than 16 nibbles remain past the read
    /// pointer, then the tail, where windows are zero-filled past the end. A function of its own
    /// for every generation: inlined into the caller, the walk's values compete with the
    /// caller's for registers.
    #[inline(never)]
    fn run(&mut self, session: &mut Session<'_>, data: &[u8]) {
        let stream = NibbleStream::new(data);
        let total = stream.len();
        let mut cursor = Cursor {
            pos: 0,
            read_ptr: 0,
            ext: false,
        };
        let mut window = 0u64;
        // `read_ptr + 16 < total`, with the sum taken once per buffer instead of per token.
        let fast_end = total.saturating_sub(16);
        while cursor.read_ptr < fast_end {
            debug_assert!(cursor.pos <= cursor.read_ptr);
            // SAFETY: `pos + 17 <= read_ptr + 17 <= total` by the loop condition. A step leaves
            // the cursor at or before the read pointer: padding moves both, other tokens are at
            // most 16 nibbles long (`token_shapes` checks the tables), and a longer NEW_PC moves
            // the read pointer with it or ends this loop.
            window = unsafe { stream.window_unchecked(cursor.pos) };
            self.step::<true>(session, &stream, &mut cursor, window);
        }
        self.drain_all(session);
        loop {
            let done = if G::ARCH.stop_at_buffer_end {
                cursor.pos >= total
            } else {
                cursor.read_ptr >= total && window == 0
            };
            if done {
                break;
            }
            window = stream.window(cursor.pos);
            self.step::<false>(session, &stream, &mut cursor, window);
        }
        self.drain_all(session);
    }

    /// Reads the token at the cursor (its first 64 bits are `window`) and moves past it.
    #[inline(always)]
    fn step<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        window: u64,
    ) {
        let arch = G::ARCH;
        let pos = cursor.pos;
        let total = stream.len();
        cursor.read_ptr = pos + 16;
        if arch.wave_start_ext_bytes && cursor.ext && window & 1 != 0 {
            cursor.pos += 2;
            return;
        }
        use TokenKind as K;
        if arch.reorder_wave_ready && G::QUIET_AT_ONCE {
            // Most tokens are of these kinds: told by their pattern, the branch on them waits
            // for the window only, not for the table load too (docs/PERFORMANCE.md).
            let frequent = &arch.frequent;
            if frequent.reg.matches(window) {
                return self.take_quiet(session, cursor, frequent.reg.slot, K::Reg, window);
            }
            if frequent.time.matches(window) {
                return self.take_time(cursor, frequent.time.slot, window);
            }
            if frequent.misc.matches(window) {
                return self.take_quiet(session, cursor, frequent.misc.slot, K::Misc, window);
            }
        }
        let slot = arch.tokens[(window & 0xFF) as usize];
        if arch.wave_start_ext_bytes && slot.kind != K::Nop {
            cursor.ext = slot.kind == K::WaveStartExt;
        }
        // Where tokens are handled as they come, the frequent kinds have arms of their own, with
        // the token's length a constant: the walk then moves on by a predicted branch instead of
        // waiting for the table load. Through the gfx10/11 reorder queue, a token is handled when
        // the next one comes, by a branch on its kind: arms by kind there would add a second
        // branch on the kind per token, which costs more than the wait. REG and MISC tokens are
        // the exception: most are handled at once there too (`take_quiet`).
        let by_kind = !arch.reorder_wave_ready;
        match slot.kind {
            K::Nop => {
                // Padding comes in long runs of zero nibbles, each one a NOP, taken at once as
                // long as the walk stays in the fast loop (read pointer + 16 < total).
                let zeros = (window.trailing_zeros() / 4) as usize;
                let limit = total.saturating_sub(pos + 32);
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
            K::Unknown => cursor.pos += Self::shape(slot, K::Unknown).nibbles(),
            K::Time => self.take_time(cursor, Self::shape(slot, K::Time), window),
            K::Timestamp => {
                // Most TIMESTAMPs only advance the shader clock: that is handled here, the
                // realtime samples and packet losses out of line.
                match arch.fields.timestamp.plain_delta(window) {
                    Some(delta) => self.clock = self.clock.wrapping_add(delta),
                    None => self.timestamp(session, window, FAST_LOOP),
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
                self.take(session, cursor, shape, K::NewPc, window, contents);
            }
            K::Reg if by_kind => {
                self.take_kind_run::<FAST_LOOP>(session, stream, cursor, slot, K::Reg, window)
            }
            K::Misc if by_kind => {
                self.take_kind_run::<FAST_LOOP>(session, stream, cursor, slot, K::Misc, window)
            }
            K::Reg if G::QUIET_AT_ONCE => self.take_quiet(session, cursor, slot, K::Reg, window),
            K::Misc if G::QUIET_AT_ONCE => self.take_quiet(session, cursor, slot, K::Misc, window),
            K::Inst if by_kind => self.take_kind(session, cursor, slot, K::Inst, window),
            K::ValuInst if by_kind => self.take_kind(session, cursor, slot, K::ValuInst, window),
            K::ImmOne if by_kind => self.take_kind(session, cursor, slot, K::ImmOne, window),
            K::AluExec if by_kind => self.take_kind(session, cursor, slot, K::AluExec, window),
            K::VmemExec if by_kind => self.take_kind(session, cursor, slot, K::VmemExec, window),
            K::Immediate if by_kind => self.take_kind(session, cursor, slot, K::Immediate, window),
            K::WaveReady if by_kind => self.take_kind(session, cursor, slot, K::WaveReady, window),
            K::WaveStart if by_kind => {
                self.take_kind_run::<FAST_LOOP>(session, stream, cursor, slot, K::WaveStart, window)
            }
            K::WaveEnd if by_kind => {
                self.take_kind_run::<FAST_LOOP>(session, stream, cursor, slot, K::WaveEnd, window)
            }
            kind => self.take(session, cursor, slot, kind, window, window),
        }
    }

    /// [`Self::take_kind`] for a kind whose tokens come in runs: a dispatch's register writes,
    /// MISC reports, the wave starts and ends of a dispatch. In the fast loop the rest of the run
    /// is taken here, by one test on the next token's kind instead of the walk's jump on it.
    ///
    /// Exact: the walk would take the same tokens in its fast loop. It stays there while the
    /// read pointer, set 16 nibbles past the previous token's start, is more than 16 nibbles
    /// from the end; the run goes on only while that holds of the token about to be taken, which
    /// starts later. After a token other than WAVE_START_EXT no extension bytes follow.
    #[inline(always)]
    fn take_kind_run<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        stream: &NibbleStream<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        window: u64,
    ) {
        debug_assert!(kind != TokenKind::WaveStartExt && kind != TokenKind::Nop);
        self.take_kind(session, cursor, slot, kind, window);
        if !(FAST_LOOP && G::RUNS) {
            return;
        }
        while cursor.pos + 32 < stream.len() {
            // SAFETY: `pos + 17 <= total` by the loop condition.
            let window = unsafe { stream.window_unchecked(cursor.pos) };
            let slot = G::ARCH.tokens[(window & 0xFF) as usize];
            if slot.kind != kind {
                break;
            }
            cursor.read_ptr = cursor.pos + 16;
            self.take_kind(session, cursor, slot, kind, window);
        }
    }

    /// The shape of `kind`'s tokens: a constant where every slot of the kind shares it.
    #[inline(always)]
    fn shape(slot: TokenSlot, kind: TokenKind) -> TokenSlot {
        G::ARCH.shapes[kind as usize].unwrap_or(slot)
    }

    /// A TIME token only advances the clock: by its delta and the 4 cycles of the token.
    #[inline(always)]
    fn take_time(&mut self, cursor: &mut Cursor, shape: TokenSlot, window: u64) {
        self.clock = self.clock.wrapping_add(shape.delta(window) + 4);
        cursor.pos += shape.nibbles();
    }

    /// [`Self::take`] for a kind known where it is called.
    #[inline(always)]
    fn take_kind(
        &mut self,
        session: &mut Session<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        window: u64,
    ) {
        self.take(
            session,
            cursor,
            Self::shape(slot, kind),
            kind,
            window,
            window,
        )
    }

    /// Moves the cursor past the token of `kind` (with `shape`), then handles the token now, or
    /// queues it on gfx10/11. The walk's next read waits for nothing the handling does.
    #[inline(always)]
    fn take(
        &mut self,
        session: &mut Session<'_>,
        cursor: &mut Cursor,
        shape: TokenSlot,
        kind: TokenKind,
        window: u64,
        contents: u64,
    ) {
        let (byte_offset, time) = self.pass(cursor, shape, window);
        if G::ARCH.reorder_wave_ready {
            self.enqueue(session, kind, contents, time, byte_offset);
        } else {
            self.dispatch(session, kind, contents, time, byte_offset);
        }
    }

    /// Moves the cursor past a token of `shape` and the clock by its delta; returns the token's
    /// byte offset and time.
    #[inline(always)]
    fn pass(&mut self, cursor: &mut Cursor, shape: TokenSlot, window: u64) -> (usize, i64) {
        let byte_offset = cursor.pos / 2;
        cursor.pos += shape.nibbles();
        self.clock = self.clock.wrapping_add(shape.delta(window));
        (byte_offset, self.clock as i64)
    }

    /// gfx10/11: moves the cursor past a REG or MISC token and queues it, or handles it at once
    /// when its handling is quiet: when it touches only the registers, which neither the tokens
    /// handled outside the queue (TIME, TIMESTAMP) nor a WAVE_READY moved ahead of it read, and
    /// the packet-loss flag, which handling any token clears. Such a token leaves [`STAND_IN`] in
    /// the queue, so that its release still clears the flag. This holds while the queue holds
    /// nothing else: earlier tokens are then handled already, and later ones are handled after.
    #[inline(always)]
    fn take_quiet(
        &mut self,
        session: &mut Session<'_>,
        cursor: &mut Cursor,
        slot: TokenSlot,
        kind: TokenKind,
        window: u64,
    ) {
        let (byte_offset, time) = self.pass(cursor, Self::shape(slot, kind), window);
        let write = RegWrite::decode(window);
        let quiet = match kind {
            TokenKind::Reg => !self.is_userdata2(&write),
            _ => misc_reports(window) == 0,
        };
        let token = Token {
            kind,
            contents: window,
            byte_offset,
        };
        let queue = &mut self.pending;
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
                return self.take_quiet_after(session, kind, window, byte_offset, time, quiet);
            }
        }
        self.pending.time = time;
        if quiet && kind == TokenKind::Reg {
            self.write_registers(&write);
        }
    }

    /// [`Self::take_quiet`] when the queue holds a token: a later token releases it when it is
    /// alone, and the new one is queued or handled quietly; otherwise the new one is queued.
    #[inline(never)]
    fn take_quiet_after(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        contents: u64,
        byte_offset: usize,
        time: i64,
        quiet: bool,
    ) {
        // The token's parts come in registers: a `Token` argument would be built in memory by
        // every REG and MISC token, whether or not it comes here.
        let token = Token {
            kind,
            contents,
            byte_offset,
        };
        let queue = &mut self.pending;
        // The caller found a token held (not `NO_TOKEN`).
        if time > queue.time && queue.more.is_empty() {
            let held = queue.first;
            let held_time = std::mem::replace(&mut queue.time, time);
            queue.first = if quiet { STAND_IN } else { token };
            self.handle_queued(session, held_time, held);
            if quiet && token.kind == TokenKind::Reg {
                self.write_registers(&RegWrite::decode(token.contents));
            }
        } else {
            self.enqueue(session, token.kind, token.contents, time, token.byte_offset);
        }
    }

    /// Hands a token to its handler: the frequent kinds here, the others out of line, so that the
    /// walk keeps fewer values across calls.
    #[inline(always)]
    fn dispatch(
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
            TokenKind::WaveStart => {
                self.wave_start(session, w, t);
                self.packet_lost = false;
            }
            TokenKind::WaveEnd => {
                self.wave_end(session, w, t);
                self.packet_lost = false;
            }
            _ => self.handle_out_of_line(session, kind, w, t, byte_offset),
        }
    }

    #[inline(never)]
    fn handle_out_of_line(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        w: u64,
        t: i64,
        byte_offset: usize,
    ) {
        self.handle(session, kind, w, t, byte_offset);
    }

    /// gfx10/11: WAVE_READY is stamped a cycle early and moved ahead of same-time tokens.
    #[inline(always)]
    fn enqueue(
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
        let token = Token {
            kind,
            contents: w,
            byte_offset,
        };
        let queue = &mut self.pending;
        if time > queue.time && queue.more.is_empty() {
            // The usual case: the one queued token is older; it is handled, the new one waits.
            let older = std::mem::replace(&mut queue.time, time);
            let first = std::mem::replace(&mut queue.first, token);
            if first.kind != TokenKind::Unknown {
                self.handle_queued(session, older, first);
            }
        } else if queue.first.kind == TokenKind::Unknown {
            queue.time = time;
            queue.first = token;
        } else if time == queue.time {
            queue.more.push(token);
            if queue.more.len() - queue.head >= MAX_PENDING {
                self.release_oldest(session);
            }
        } else if time < queue.time {
            self.handle_queued(session, time, token);
        } else {
            self.drain(session);
            self.pending.time = time;
            self.pending.first = token;
        }
    }

    /// The queue is over its bound: its oldest token is handled.
    #[cold]
    #[inline(never)]
    fn release_oldest(&mut self, session: &mut Session<'_>) {
        let queue = &mut self.pending;
        let next = queue.more[queue.head];
        queue.head += 1;
        let time = queue.time;
        // The queue holds more than one token, so `first` is one.
        let oldest = std::mem::replace(&mut queue.first, next);
        self.handle_queued(session, time, oldest);
        let queue = &mut self.pending;
        if queue.head >= MAX_PENDING {
            queue.more.drain(..queue.head);
            queue.head = 0;
        }
    }

    #[inline(always)]
    fn handle_queued(&mut self, session: &mut Session<'_>, time: i64, token: Token) {
        let Token {
            kind,
            contents,
            byte_offset,
        } = token;
        self.handle(session, kind, contents, time, byte_offset);
    }

    /// Handles every queued token (at the end of a loop).
    #[inline(never)]
    fn drain_all(&mut self, session: &mut Session<'_>) {
        self.drain(session);
    }

    #[inline(always)]
    fn drain(&mut self, session: &mut Session<'_>) {
        // Handling a token never queues one.
        let time = self.pending.time;
        let first = std::mem::replace(&mut self.pending.first, NO_TOKEN);
        if first.kind != TokenKind::Unknown {
            self.handle_queued(session, time, first);
            let mut next = self.pending.head;
            while let Some(&token) = self.pending.more.get(next) {
                self.handle_queued(session, time, token);
                next += 1;
            }
            self.pending.more.clear();
            self.pending.head = 0;
        }
    }

    #[inline(never)]
    fn timestamp(&mut self, session: &mut Session<'_>, window: u64, fast_loop: bool) {
        let average = fast_loop != G::ARCH.average_realtime_in_tail;
        match G::ARCH.fields.timestamp {
            TimestampFields::Kind { kind, value } => match kind.get(window) {
                1 => self.clock = self.clock.wrapping_add(value.get(window)),
                2 => self.realtime(session, value.get(window), average),
                _ => {}
            },
            TimestampFields::Flags {
                packet_lost,
                realtime,
                value,
            } => {
                let lost = packet_lost.get(window) != 0;
                if realtime.get(window) == 0 {
                    self.clock = self.clock.wrapping_add(value.get(window));
                    if lost {
                        self.packet_loss(session);
                    }
                } else if !lost {
                    self.realtime(session, value.get(window), average);
                }
            }
        }
    }

    /// A realtime sample; in the averaging loop a sample that does not advance both clocks is
    /// merged into the previous one.
    fn realtime(&mut self, session: &mut Session<'_>, value: u64, average: bool) {
        if value == 0 {
            return;
        }
        let shader_clock = self.clock as i64;
        if average && session.emitter.filter().mode(RecordKind::Realtime) == Delivery::Pooled {
            if let Some(last) = session.emitter.pending_realtime().last_mut() {
                if last.realtime_clock >= value || last.shader_clock >= shader_clock {
                    last.realtime_clock =
                        ((u128::from(last.realtime_clock) + u128::from(value)) / 2) as u64;
                    last.shader_clock =
                        ((i128::from(last.shader_clock) + i128::from(shader_clock)) / 2) as i64;
                    return;
                }
            }
        }
        session.emitter.add(Realtime {
            shader_clock,
            realtime_clock: value,
            reserved: 0,
        });
    }

    #[inline(never)]
    fn packet_loss(&mut self, session: &mut Session<'_>) {
        self.packet_lost = true;
        session.marker_packet_loss();
        session.note_data_lost();
        self.event(
            session,
            EventKind::PacketLoss,
            self.clock as i64,
            0,
            0,
            0,
            0,
        );
    }

    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn event(
        &self,
        session: &mut Session<'_>,
        kind: EventKind,
        time: i64,
        me: u8,
        pipe: u8,
        flags: u16,
        payload: u64,
    ) {
        let event = Event {
            size: std::mem::size_of::<Event>() as u64,
            time,
            kind: kind as u32,
            me_id: me,
            pipe_id: pipe,
            flags,
            payload: EventPayload { raw: payload },
            byte_offset: 0,
        };
        session.emitter.event(&event);
    }

    #[inline(always)]
    fn handle(
        &mut self,
        session: &mut Session<'_>,
        kind: TokenKind,
        w: u64,
        t: i64,
        byte_offset: usize,
    ) {
        match kind {
            TokenKind::Header => self.header(w),
            TokenKind::Reg => self.reg(session, w, t),
            TokenKind::RegInit => self.reg_init(session, w, t, byte_offset),
            TokenKind::Event | TokenKind::EventSync => self.rdna_event(session, w, t),
            TokenKind::Misc => self.misc(session, w, t),
            TokenKind::WaveStart => self.wave_start(session, w, t),
            TokenKind::WaveEnd => self.wave_end(session, w, t),
            TokenKind::Inst => self.inst(session, w, t),
            TokenKind::ValuInst => {
                let wave = G::ARCH.fields.valu_wave.get(w);
                if let Some(wave) = self.waves.live(wave).filter(|w| !w.trapped) {
                    wave.rdna_instruction(crate::records::Category::Valu, 1, t);
                }
            }
            TokenKind::ImmOne => {
                let wave = G::ARCH.fields.imm_one_wave.get(w);
                if let Some(wave) = self.waves.live(wave).filter(|w| !w.trapped) {
                    wave.rdna_immediate(t);
                }
            }
            TokenKind::Immediate => self.for_each_masked(w, |wave| wave.rdna_immediate(t)),
            // A trapped wave still stalls: the first record after its return folds that stall in.
            TokenKind::WaveReady => self
                .for_each_masked_even_trapped(w, |wave| wave.update_state(WaveStateKind::Stall, t)),
            TokenKind::NewPc => {
                let f = &G::ARCH.fields;
                let pc = self.registers.translate(f.new_pc_address.get(w) << 2);
                // A trapped wave's NEW_PC points into the trap handler, which is not recorded. An
                // ended wave was emitted at its WAVE_END: a NEW_PC after it reaches nothing.
                if let Some(wave) = self.waves.live(f.new_pc_wave.get(w)).filter(|w| !w.trapped) {
                    wave.set_next_pc(pc);
                }
            }
            TokenKind::ShaderData => self.shader_data(session, w, t, false),
            TokenKind::ShaderDataShort => self.shader_data(session, w, t, true),
            _ => {}
        }
        self.packet_lost = false;
    }

    /// IMMEDIATE: bits 8..24 are a mask of wave slots, applied in slot order to the waves that
    /// are not trapped.
    fn for_each_masked(&mut self, w: u64, mut f: impl FnMut(&mut WaveBuilder)) {
        self.for_each_masked_even_trapped(w, |wave| {
            if !wave.trapped {
                f(wave)
            }
        });
    }

    /// WAVE_READY: the same mask, applied to trapped waves too.
    fn for_each_masked_even_trapped(&mut self, w: u64, mut f: impl FnMut(&mut WaveBuilder)) {
        let mask = (w >> 8) & 0xFFFF;
        for slot in 0..16 {
            if mask >> slot & 1 != 0 {
                if let Some(wave) = self.waves.live(slot) {
                    f(wave);
                }
            }
        }
    }

    #[inline(never)]
    fn header(&mut self, w: u64) {
        let dprate = (w >> 28) & G::ARCH.dprate_mask;
        let (simd, wgp, sa) = ((w >> 13) & 3, (w >> 15) & 7, (w >> 19) & 1);
        self.target = Target {
            wgp,
            unit: location_index(sa, wgp, simd, 0) >> 5,
            dprate: if dprate == 0 { 1 } else { 1 << (dprate - 1) },
            derate: 1 << ((w >> 33) & 7),
        };
        self.double_buffer = self.version >= 4 && (w >> 43) & 1 != 0;
        self.rules.find_tokenless_barrier_waits = G::ARCH
            .header_exclude_barrier_wait
            .is_some_and(|f| f.get(w) != 0);
    }

    #[inline(always)]
    fn reg(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let write = RegWrite::decode(w);
        self.write_registers(&write);
        if self.is_userdata2(&write) {
            self.userdata2(session, w, t);
        }
    }

    #[inline(always)]
    fn write_registers(&mut self, write: &RegWrite) {
        if write.compute {
            self.registers
                .write_cs(write.me, write.pipe, write.address as u16, write.data);
        }
    }

    /// A USERDATA_2 write, which may report an event or the realtime frequency.
    #[inline(always)]
    fn is_userdata2(&self, write: &RegWrite) -> bool {
        (!write.compute || G::ARCH.reg_all_userdata) && write.address == USERDATA_2
    }

    #[inline(never)]
    fn userdata2(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let RegWrite { me, pipe, data, .. } = RegWrite::decode(w);
        let event = self.registers.write_userdata2(me, pipe, data);
        if let Some(UserdataEvent::CodeObjectLoad(_) | UserdataEvent::CodeObjectUnload(_)) = event {
            for (d, cached) in self.start_pcs.iter_mut().enumerate() {
                cached.0 = !self.registers.program(d);
            }
        }
        match event {
            Some(UserdataEvent::CodeObjectLoad(id)) => {
                self.event(session, EventKind::CodeObjectLoad, t, me, pipe, 0, id)
            }
            Some(UserdataEvent::CodeObjectUnload(id)) => {
                self.event(session, EventKind::CodeObjectUnload, t, me, pipe, 0, id)
            }
            Some(UserdataEvent::RealtimeFrequency(hz)) => session.rt_frequency(hz),
            Some(UserdataEvent::CounterInterval(_)) | None => {}
        }
    }

    #[inline(never)]
    fn reg_init(&mut self, session: &mut Session<'_>, w: u64, t: i64, byte_offset: usize) {
        if let Some((me, pipe)) = dispatch_initiator(w) {
            let dispatch = Dispatch {
                byte_offset: byte_offset as u64,
                ..self.registers.dispatch(t, me, pipe, self.version)
            };
            session.emitter.single(Record::Dispatch(&dispatch));
        }
    }

    #[inline(never)]
    fn rdna_event(&self, session: &mut Session<'_>, w: u64, t: i64) {
        if let Some(event) = event_record(w) {
            session.emitter.event(&Event { time: t, ..event });
        }
    }

    /// A context save begins: the traced waves are about to be saved, and nothing more is
    /// recorded for them until they return from the trap handler that restores them.
    #[cold]
    fn trap_traced_waves(&mut self) {
        for slot in 0..SLOTS as u64 {
            if let Some(wave) = self.waves.live(slot) {
                wave.trapped = true;
            }
        }
    }

    #[inline]
    fn misc(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        /// Events reported by MISC bits 16..24, by bit - 16 (bit 16 is handled first).
        const FLAG_EVENTS: [Option<EventKind>; 8] = [
            None,
            Some(EventKind::GcRinse),
            None,
            Some(EventKind::SaveContext),
            Some(EventKind::TtStallBegin),
            Some(EventKind::TtStallEnd),
            Some(EventKind::DidtStallBegin),
            Some(EventKind::DidtStallEnd),
        ];
        let reported = misc_reports(w);
        if reported == 0 {
            return;
        }
        if reported & 1 != 0 {
            if G::ARCH.fields.misc_reports_packet_loss {
                self.packet_loss(session);
            } else {
                self.event(session, EventKind::SpmSample, t, 0, 0, 0, 0);
            }
        }
        if reported & SAVE_CONTEXT != 0 {
            self.trap_traced_waves();
        }
        let mut flags = reported & !1;
        while flags != 0 {
            if let Some(kind) = FLAG_EVENTS[flags.trailing_zeros() as usize] {
                self.event(session, kind, t, 0, 0, 0, 0);
            }
            flags &= flags - 1;
        }
    }

    fn unit(&self, fields: &UnitFields, w: u64) -> (u64, u64, u64, u64) {
        (
            fields.sa.get(w),
            fields.wgp.get(w),
            fields.simd.get(w),
            fields.wave.get(w),
        )
    }

    /// Whether the wave at location `loc` is on the traced SIMD. (The unit fields are no wider
    /// than their parts of the location index: equal units, equal fields.)
    fn is_target(&self, loc: usize) -> bool {
        loc >> 5 == self.target.unit
    }

    fn occupancy(
        session: &mut Session<'_>,
        pc: Pc,
        time: i64,
        cu: u8,
        simd: u64,
        wave: u64,
        flags: OccupancyFlags,
    ) {
        let record = Occupancy::new(pc, time, cu, simd as u8, wave as u8, flags);
        session.emitter.add(record);
    }

    /// Most wave starts are of waves on other SIMDs than the traced one, in a stream that lost
    /// nothing, without markers: their occupancy record (pooled) and location are all there is
    /// to them, and they make no call.
    #[inline(never)]
    fn wave_start(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let f = &G::ARCH.fields;
        let (sa, wgp, simd, wave) = self.unit(&f.wave_start, w);
        let loc = location_index(sa, wgp, simd, wave);
        let count = f.wave_start_count.get(w);
        if self.packet_lost
            || self.is_target(loc)
            || CONTEXT_COUNTS.contains(&count)
            || session.markers_enabled()
        {
            return self.wave_start_in_full(session, w, t);
        }
        let (me, pipe) = (f.wave_start_me.get(w), f.wave_start_pipe.get(w));
        // A program not yet translated, a batch without room: the full path, which makes calls.
        let d = dispatcher_index(me as u8, pipe as u8);
        if self.start_pcs[d].0 != self.registers.program(d) {
            return self.wave_start_in_full(session, w, t);
        }
        let pc = self.start_pcs[d].1;
        let flags = Self::start_flags(me, pipe);
        let start = Occupancy::new(pc, t, (sa << 7 | wgp) as u8, simd as u8, wave as u8, flags);
        if !session.emitter.pool_occupancy_if_room(start) {
            return self.wave_start_in_full(session, w, t);
        }
        if let Some(location) = self.locations.get_mut(loc) {
            *location = Location { running: true, pc };
        }
    }

    /// [`Registers::wave_start_pc`], translated once per program. (The default entry, program
    /// 0, is what `Registers::default` translates it to: address 0, no code object.)
    #[inline(always)]
    fn wave_start_pc(&mut self, me: u8, pipe: u8) -> Pc {
        let d = dispatcher_index(me, pipe);
        let program = self.registers.program(d);
        if self.start_pcs[d].0 != program {
            self.start_pcs[d] = (program, self.registers.wave_start_pc(me, pipe));
        }
        self.start_pcs[d].1
    }

    fn start_flags(me: u64, pipe: u64) -> OccupancyFlags {
        OccupancyFlags {
            start: true,
            me_id: me as u8,
            pipe_id: pipe as u8,
            ..OccupancyFlags::default()
        }
    }

    /// A wave runs at `loc` from `t` on: its location and its occupancy record.
    #[inline(always)]
    fn start_location(
        &mut self,
        session: &mut Session<'_>,
        loc: usize,
        pc: Pc,
        t: i64,
        (sa, wgp, simd, wave): (u64, u64, u64, u64),
        flags: OccupancyFlags,
    ) {
        if let Some(location) = self.locations.get_mut(loc) {
            *location = Location { running: true, pc };
        }
        Self::occupancy(session, pc, t, (sa << 7 | wgp) as u8, simd, wave, flags);
    }

    /// A wave start with all its rules: context save and restore, packet loss, markers, the
    /// traced SIMD's waves.
    #[inline(never)]
    fn wave_start_in_full(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let f = &G::ARCH.fields;
        let (sa, wgp, simd, wave) = self.unit(&f.wave_start, w);
        let me = f.wave_start_me.get(w);
        let pipe = f.wave_start_pipe.get(w);
        let count = f.wave_start_count.get(w);
        let cu = (sa << 7 | wgp) as u8;
        let loc = location_index(sa, wgp, simd, wave);
        let target = self.is_target(loc);
        if CONTEXT_COUNTS.contains(&count) {
            self.context_switch(
                session,
                (count - CONTEXT_COUNTS.start) as u32,
                t,
                (cu, simd, wave),
                target,
                loc,
            );
            return;
        }
        let pc = self.wave_start_pc(me as u8, pipe as u8);
        if self.packet_lost && self.locations.get(loc).running {
            Self::occupancy(
                session,
                Pc::NONE,
                t.wrapping_sub(1),
                cu,
                simd,
                wave,
                OccupancyFlags::default(),
            );
        }
        let flags = Self::start_flags(me, pipe);
        self.start_location(session, loc, pc, t, (sa, wgp, simd, wave), flags);
        session.marker_wave_start(cu, simd as u8, wave as u8, pc);
        if target {
            let id = WaveIdentity {
                cu,
                simd: simd as u8,
                wave_id: wave as u8,
                dispatcher: (me << 4 | pipe) as u8,
                ..WaveIdentity::default()
            };
            if let Some(builder) = self.waves.start(wave) {
                builder.restart(id, t, pc);
            }
        }
    }

    /// WAVE_START counts 66–89: a context save or restore of the wave at this location.
    #[inline(never)]
    fn context_switch(
        &mut self,
        session: &mut Session<'_>,
        index: u32,
        t: i64,
        (cu, simd, wave): (u8, u64, u64),
        target: bool,
        loc: usize,
    ) {
        let location = self.locations.get(loc);
        if CONTEXT_SAVE_MASK >> index & 1 != 0 {
            if target {
                if let Some(w) = self.waves.live(wave) {
                    w.contexts = w.contexts.saturating_add(1);
                    w.rdna_trap(t);
                }
            }
            let flags = OccupancyFlags::default();
            Self::occupancy(session, location.pc, t, cu, simd, wave, flags);
        } else if CONTEXT_RESTORE_MASK >> index & 1 != 0 {
            if target {
                if self.waves.live(wave).is_none() {
                    if let Some(w) = self.waves.start(wave) {
                        let id = WaveIdentity {
                            cu,
                            simd: simd as u8,
                            wave_id: wave as u8,
                            ..WaveIdentity::default()
                        };
                        w.restart(id, t, Pc::NONE);
                        w.trapped = true;
                    }
                }
                if let Some(w) = self.waves.live(wave) {
                    w.contexts = w.contexts.saturating_add(1);
                    w.extend_trap(t);
                    // Restored waves resume in their trap handler, until the return from trap.
                    w.trapped = true;
                }
            }
            let flags = OccupancyFlags {
                start: true,
                ..OccupancyFlags::default()
            };
            Self::occupancy(session, location.pc, t, cu, simd, wave, flags);
        }
    }

    /// Most wave ends are of running waves on other SIMDs than the traced one, without markers:
    /// their location stops running and their occupancy record is pooled, without a call.
    #[inline(never)]
    fn wave_end(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let (sa, wgp, simd, wave) = self.unit(&G::ARCH.fields.wave_end, w);
        let loc = location_index(sa, wgp, simd, wave);
        if !self.is_target(loc) && !session.markers_enabled() {
            if let Some(location) = self.locations.written_mut(loc).filter(|l| l.running) {
                let cu = (sa << 7 | wgp) as u8;
                let flags = OccupancyFlags::default();
                let end = Occupancy::new(location.pc, t, cu, simd as u8, wave as u8, flags);
                if session.emitter.pool_occupancy_if_room(end) {
                    location.running = false;
                    return;
                }
            }
        }
        self.wave_end_in_full(session, w, t)
    }

    /// A wave end with all its rules: the traced SIMD's waves, a start never seen, markers,
    /// immediate occupancy, a full batch.
    #[inline(never)]
    fn wave_end_in_full(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let (sa, wgp, simd, wave) = self.unit(&G::ARCH.fields.wave_end, w);
        let cu = (sa << 7 | wgp) as u8;
        // A WAVE_END of the traced SIMD whose slot holds no running wave (its WAVE_START was
        // lost, or the slot's wave has ended already) is skipped whole, occupancy and marker
        // included (rdna.md §4.4).
        let loc = location_index(sa, wgp, simd, wave);
        let rules = self.rules;
        if self.is_target(loc) && !self.waves.complete(session, wave, t, &rules) {
            return;
        }
        // A unit without a running wave (its start never seen, or its wave ended already) ends
        // with the PC {0, 0}, after a start at time 0 placed first; the PC of the unit's last
        // wave is not reused (rdna.md §4.4).
        let location = self.locations.get(loc);
        let pc = if location.running {
            location.pc
        } else {
            let flags = OccupancyFlags {
                start: true,
                ..OccupancyFlags::default()
            };
            let start = Occupancy::new(Pc::NONE, 0, cu, simd as u8, wave as u8, flags);
            session.emitter.occupancy_first(start);
            Pc::NONE
        };
        if let Some(location) = self.locations.get_mut(loc) {
            location.running = false;
        }
        session.marker_wave_end(cu, simd as u8, wave as u8, pc);
        Self::occupancy(
            session,
            pc,
            t,
            cu,
            simd,
            wave,
            OccupancyFlags::default(),
        );
        // As the reference: one time-sorted batch per buffer, or full batches when double-buffered.
        if self.double_buffer && session.emitter.pending_occupancy().len() >= POOL_LIMIT {
            session.emitter.flush_occupancy();
        }
    }

    fn inst(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let f = &G::ARCH.fields;
        let wave = f.inst_wave.get(w);
        let info = G::ARCH.insts[f.inst_id.get(w) as usize];
        let cycles = u32::from(info.cycles)
            * match info.scale {
                CycleScale::One => 1,
                CycleScale::DpRate => self.target.dprate,
                CycleScale::DpRateDerate => self.target.dprate * self.target.derate,
            };
        if let InstEffect::OtherSimd(category) = info.effect {
            session.emitter.add(InstOtherSimd {
                size: std::mem::size_of::<InstOtherSimd>() as u64,
                time: t,
                cycles: cycles as u16,
                wgp: self.target.wgp as u8,
                category: category as u8,
            });
            return;
        }
        let Some(builder) = self.waves.live(wave) else {
            return;
        };
        // Trap entry and return act whether or not the wave is trapped; while it is, nothing
        // else is recorded.
        match info.effect {
            InstEffect::Trap => return builder.rdna_trap(t),
            InstEffect::ReturnFromTrap => return builder.rdna_return_from_trap(t),
            _ if builder.trapped => return,
            _ => builder.rdna_inst_token(t),
        }
        match info.effect {
            InstEffect::Wave(category) => builder.rdna_instruction(category, cycles, t),
            InstEffect::Jump => {
                builder.rdna_instruction(crate::records::Category::Salu, cycles, t);
                builder.open_pc_slot();
            }
            InstEffect::Immed => builder.rdna_immediate(t),
            InstEffect::Trap
            | InstEffect::ReturnFromTrap
            | InstEffect::Ignore
            | InstEffect::OtherSimd(_) => {}
        }
    }

    #[inline(never)]
    fn shader_data(&self, session: &mut Session<'_>, w: u64, t: i64, short: bool) {
        let f = &G::ARCH.fields.shader_data;
        if f.invalid.is_some_and(|bit| bit.get(w) != 0) {
            return;
        }
        let (sa, wgp, simd, wave) = self.unit(&f.unit, w);
        let privileged = f
            .privileged
            .is_some_and(|(long, short_form)| (if short { short_form } else { long }).get(w) != 0);
        session.shader_data(ShaderData {
            time: t,
            value: if short {
                f.short_data.get(w)
            } else {
                f.data.get(w)
            },
            cu: (sa << 7 | wgp) as u8,
            simd: simd as u8,
            wave_id: wave as u8,
            flags: u8::from(short) | u8::from(privileged) << 1,
            reserved: 0,
        });
    }

    fn finish(&mut self, session: &mut Session<'_>) {
        let rules = self.rules;
        // As the reference at a cut: the buffer's pooled batches go out before the waves left
        // unfinished (and so before their WAVE_INCOMPLETE record).
        session.emitter.flush_buffer_end();
        self.waves.finish_unfinished(session, &rules);
        let registers = &self.registers;
        session.finish_buffer(|address| registers.translate_from_start(address));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::registers::cs;
    use crate::arch::table::{bits, Field};
    use crate::arch::userdata::{ENABLE, OPCODE_CODEOBJ};
    use crate::isa::{IsaError, IsaProvider};
    use crate::sink::{Emitter, Filter};

    /// gfx10 and gfx11 with every token through the reorder queue.
    struct Gfx10Queued;
    struct Gfx11Queued;

    impl Generation for Gfx10Queued {
        const ARCH: &'static RdnaArch = &gfx10::ARCH;
        const QUIET_AT_ONCE: bool = false;
        spare_decoder!(Gfx10Queued);
    }

    impl Generation for Gfx11Queued {
        const ARCH: &'static RdnaArch = &gfx11::ARCH;
        const QUIET_AT_ONCE: bool = false;
        spare_decoder!(Gfx11Queued);
    }

    /// gfx12 with every token through the walk's jump on its kind.
    struct Gfx12Stepped;

    impl Generation for Gfx12Stepped {
        const ARCH: &'static RdnaArch = &gfx12::ARCH;
        const RUNS: bool = false;
        spare_decoder!(Gfx12Stepped);
    }

    /// Every address holds a 4-byte SALU instruction.
    struct SaluEverywhere;

    impl IsaProvider for SaluEverywhere {
        fn disassemble(&mut self, _: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
            text.clear();
            text.extend_from_slice(b"s_mov_b32 s0, 0");
            Ok(4)
        }
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn chance(&mut self, percent: u64) -> bool {
            self.below(100) < percent
        }
    }

    fn set(w: &mut u64, field: Field, value: u64) {
        let mask = (1u64 << field.width) - 1;
        *w = *w & !(mask << field.lo) | (value & mask) << field.lo;
    }

    /// A random stream of HEADER `version`, weighted to what the reorder queue must get right:
    /// runs of tokens of one time, quiet and reporting REG and MISC tokens, WAVE_READY of the
    /// same clock, TIMESTAMPs that lose packets before WAVE_STARTs of running waves, register
    /// writes that DISPATCH and WAVE_START records read. A token repeats the previous one's kind
    /// with `repeat` percent chance; `tail` zero nibbles end the stream.
    fn random_stream(
        rng: &mut Rng,
        arch: &RdnaArch,
        version: u64,
        tokens: usize,
        repeat: u64,
        tail: usize,
    ) -> Vec<u8> {
        use TokenKind as K;
        const KINDS: [TokenKind; 17] = [
            K::Reg,
            K::Reg,
            K::Reg,
            K::Misc,
            K::Misc,
            K::Timestamp,
            K::Timestamp,
            K::Time,
            K::WaveStart,
            K::WaveStart,
            K::WaveEnd,
            K::WaveReady,
            K::Inst,
            K::RegInit,
            K::Event,
            K::Immediate,
            K::WaveStartExt,
        ];
        let f = &arch.fields;
        let mut nibbles = Vec::new();
        let mut put =
            |w: u64, bits: usize| nibbles.extend((0..bits / 4).map(|i| (w >> (4 * i)) as u8 & 0xF));
        put(0x11 | version << 7, 64);
        let mut kind = K::Reg;
        for _ in 0..tokens {
            for _ in 0..rng.below(3) {
                put(0, 4);
            }
            if !rng.chance(repeat) {
                kind = KINDS[rng.below(KINDS.len() as u64) as usize];
            }
            let slots: Vec<usize> = (0..256).filter(|&i| arch.tokens[i].kind == kind).collect();
            let index = slots[rng.below(slots.len() as u64) as usize];
            let slot = arch.tokens[index];
            let mut w = index as u64 | rng.next() << 8;
            let unit = |w: &mut u64, fields: &UnitFields, rng: &mut Rng| {
                let target = rng.chance(80);
                set(w, fields.sa, if target { 0 } else { rng.next() });
                set(w, fields.wgp, if target { 0 } else { rng.next() });
                set(w, fields.simd, if target { 0 } else { rng.next() });
                set(w, fields.wave, rng.below(4));
            };
            match kind {
                K::Reg => {
                    const TRACKED: [u16; 10] = [
                        cs::NUM_THREAD_X,
                        cs::NUM_THREAD_Y,
                        cs::NUM_THREAD_Z,
                        cs::PGM_LO,
                        cs::PGM_HI,
                        cs::DISPATCH_PKT_LO,
                        cs::DISPATCH_PKT_HI,
                        cs::PGM_RSRC1,
                        cs::PGM_RSRC2,
                        cs::PGM_RSRC3,
                    ];
                    let (compute, address) = match rng.below(3) {
                        0 => (0, USERDATA_2),
                        1 => (1, u64::from(TRACKED[rng.below(10) as usize])),
                        _ => (rng.below(2), rng.below(0x10000)),
                    };
                    set(&mut w, bits(15, 1), compute);
                    set(&mut w, bits(16, 16), address);
                    // The protocol words that load code objects and report the frequency.
                    let word = match rng.below(4) {
                        0 => ENABLE,
                        1 => OPCODE_CODEOBJ | (rng.below(7) as u32) << 8,
                        2 => 6 | (rng.below(100) as u32) << 12,
                        _ => rng.next() as u32 & 0xFFFF,
                    };
                    set(&mut w, bits(32, 32), u64::from(word));
                }
                K::Misc => set(
                    &mut w,
                    bits(16, 8),
                    if rng.chance(60) { 0 } else { rng.next() },
                ),
                K::Timestamp => {
                    set(&mut w, bits(8, 1), u64::from(rng.chance(50)));
                    set(&mut w, bits(9, 1), u64::from(rng.chance(30)));
                    set(&mut w, bits(12, 36), rng.below(3) * rng.below(100));
                }
                K::WaveStart => {
                    unit(&mut w, &f.wave_start, rng);
                    set(&mut w, f.wave_start_count, rng.below(100));
                }
                K::WaveEnd => unit(&mut w, &f.wave_end, rng),
                K::WaveReady | K::Immediate => set(&mut w, bits(8, 16), rng.below(16)),
                K::Inst => {
                    set(&mut w, f.inst_wave, rng.below(4));
                    set(&mut w, f.inst_id, rng.below(128));
                }
                _ => {}
            }
            if kind != K::Time && rng.chance(60) {
                w &= !(u64::from(slot.delta_mask) << slot.delta_shift);
            }
            if arch.tokens[(w & 0xFF) as usize].kind == kind {
                put(w, usize::from(slot.bits));
            }
        }
        nibbles.extend(std::iter::repeat_n(0, tail));
        nibbles
            .chunks(2)
            .map(|pair| pair[0] | pair.get(1).copied().unwrap_or(0) << 4)
            .collect()
    }

    /// Every record delivered, in order, with what its pointers point to.
    fn transcript<G: Generation>(version: u8, data: &[u8], filter: Filter) -> Vec<String> {
        let mut out = Vec::new();
        let mut sink = |record: Record<'_>| {
            out.push(match record {
                Record::Wave(w) => {
                    // SAFETY: non-empty arrays hold their counts for the duration of the
                    // callback; empty ones are NULL.
                    let insts = match w.instructions_size {
                        0 => &[][..],
                        n => unsafe {
                            std::slice::from_raw_parts(w.instructions_array, n as usize)
                        },
                    };
                    let timeline = match w.timeline_size {
                        0 => &[][..],
                        n => unsafe { std::slice::from_raw_parts(w.timeline_array, n as usize) },
                    };
                    let id = (
                        w.cu,
                        w.simd,
                        w.wave_id,
                        w.contexts,
                        w.begin_time,
                        w.end_time,
                    );
                    format!("wave {id:?} {insts:?} {timeline:?}")
                }
                Record::Marker(markers) => {
                    let fields: Vec<_> = markers
                        .iter()
                        .map(|m| (m.shaderdata, m.marker_id, m.delay))
                        .collect();
                    format!("markers {fields:?}")
                }
                other => format!("{other:?}"),
            });
            0
        };
        let mut isa = SaluEverywhere;
        let mut session = Session::new(Emitter::new(&mut sink, filter), &mut isa);
        RdnaDecoder::<G>::for_buffer(version).decode(&mut session, data);
        drop(session);
        out
    }

    #[test]
    fn quiet_tokens_handled_at_once_decode_as_through_the_queue() {
        let mut immediate = Filter::default();
        for kind in [
            RecordKind::Occupancy,
            RecordKind::Realtime,
            RecordKind::ShaderData,
            RecordKind::Marker,
        ] {
            immediate.set(kind, Delivery::Immediate);
        }
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..1000 {
            let gfx11 = random_stream(&mut rng, &gfx11::ARCH, 3, 50 + round % 400, 0, 40);
            let gfx10 = random_stream(&mut rng, &gfx10::ARCH, 2, 50 + round % 400, 0, 40);
            for filter in [Filter::default(), immediate] {
                let queued = transcript::<Gfx11Queued>(3, &gfx11, filter);
                assert!(queued.len() > 3, "round {round}: {queued:?}");
                assert_eq!(
                    transcript::<Gfx11>(3, &gfx11, filter),
                    queued,
                    "gfx11 round {round}"
                );
                let queued = transcript::<Gfx10Queued>(2, &gfx10, filter);
                assert!(queued.len() > 3, "round {round}: {queued:?}");
                assert_eq!(
                    transcript::<Gfx10>(2, &gfx10, filter),
                    queued,
                    "gfx10 round {round}"
                );
            }
        }
    }

    #[test]
    fn runs_of_a_kind_decode_as_token_by_token() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..2000 {
            let mut gfx12 = random_stream(&mut rng, &gfx12::ARCH, 4, 20 + round % 300, 60, 0);
            // Half the streams end in a run of REG tokens and realtime samples, which are merged
            // only in the fast loop: where a run ends decides which loop takes what follows.
            if round % 2 == 0 {
                let mut ending = Vec::new();
                for _ in 0..1 + rng.below(4) {
                    let write = RegWrite {
                        me: 0,
                        pipe: 0,
                        compute: true,
                        address: rng.below(0x100),
                        data: rng.next() as u32,
                    };
                    ending.push((write.encode(), 64));
                }
                for _ in 0..2 {
                    ending.push((0x81 | (1 + rng.below(50)) << 12, 64));
                }
                let tail = rng.below(40) as usize;
                gfx12 = append(&gfx12, &ending, tail);
            }
            let stepped = transcript::<Gfx12Stepped>(4, &gfx12, Filter::default());
            assert!(!stepped.is_empty(), "round {round}");
            assert_eq!(
                transcript::<Gfx12>(4, &gfx12, Filter::default()),
                stepped,
                "round {round}"
            );
        }
    }

    /// `data` followed by the tokens `(raw, bits)` and `tail` zero nibbles.
    fn append(data: &[u8], tokens: &[(u64, usize)], tail: usize) -> Vec<u8> {
        let mut nibbles: Vec<u8> = data.iter().flat_map(|b| [b & 0xF, b >> 4]).collect();
        for &(raw, bits) in tokens {
            nibbles.extend((0..bits / 4).map(|i| (raw >> (4 * i)) as u8 & 0xF));
        }
        nibbles.extend(std::iter::repeat_n(0, tail));
        nibbles
            .chunks(2)
            .map(|pair| pair[0] | pair.get(1).copied().unwrap_or(0) << 4)
            .collect()
    }
}

//! gfx10.3 / gfx11 / gfx12 (RDNA): the shared decode driver for the nibble stream.
//!
//! The token reader follows the reference's two loops (SQTT_FORMAT §1.3–1.4): a fast loop while
//! more than 64 bits remain past the read pointer, then a tail loop fed with zero nibbles. The
//! per-generation differences are data in [`RdnaArch`] (`gfx10.rs`, `gfx11.rs`, `gfx12.rs`;
//! `gfx1250.rs` holds the gfx12.5 token table, which only the scanner reads so far).
//!
//! The walk over the stream is in `walk.rs`, the gfx10/11 reorder queue in `queue.rs`, the
//! token handlers in `handlers.rs`, the wave slots in `slots.rs` and the timing of the traced
//! waves in `wave.rs`; the decoder's state and its life from buffer to buffer are here.

pub mod fields;
pub mod gfx10;
pub mod gfx11;
pub mod gfx12;
pub mod gfx1250;
mod handlers;
mod queue;
mod slots;
mod walk;
mod wave;

pub use handlers::{dispatch_initiator, event_record, RegWrite};

use crate::arch::locations::StampedTable;
use crate::arch::registers::{Registers, DISPATCHERS};
use crate::arch::table::RdnaArch;
use crate::error::{DecodeError, ErrorKind};
use crate::records::Pc;
use crate::sink::OccupancyOrder;
use crate::spare::{Recycle, Slot, Spare};
use crate::wave::{Session, StitchRules};
use queue::ReorderQueue;
use slots::TargetWaves;

/// Out of line, so that the RDNA decoders leave the caller's register allocation (and the gfx9
/// walk inlined there) alone.
#[inline(never)]
pub fn decode(session: &mut Session<'_>, version: u8, data: &[u8]) -> Result<(), DecodeError> {
    match version {
        1 | 2 => RdnaDecoder::<Gfx10>::for_buffer(version).decode(session, data),
        3 => RdnaDecoder::<Gfx11>::for_buffer(version).decode(session, data),
        4 => RdnaDecoder::<Gfx12>::for_buffer(version).decode(session, data),
        // The version field sits in the header's first two bytes.
        _ => {
            let kind = ErrorKind::UnsupportedVersion(version);
            return Err(DecodeError::new(kind, session.buffer, 0));
        }
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
    /// gfx10/11: ALU_EXEC and VMEM_EXEC tokens join the reorder queue only when they could
    /// matter ([`RdnaDecoder::take_exec`]); the tests turn this off to check that both ways
    /// decode alike.
    const EXEC_AT_ONCE: bool = true;
    /// The rest of a run of tokens of one kind is taken without the walk's jump on the kind
    /// (gfx12: [`RdnaDecoder::take_run`], REG tokens [`RdnaDecoder::take_reg_run`]; gfx10/11,
    /// wave starts and ends: [`RdnaDecoder::take_wave_run`]); the tests turn this off to check
    /// that both ways decode alike.
    const TAKE_RUNS: bool = true;
    /// A zero nibble after a token is taken with it in the fast loop ([`walk::take_padding`]);
    /// the tests turn this off to check that both ways decode alike.
    const TAKE_PADDING: bool = true;
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

/// The traced unit (HEADER DSA/DWGP/DSIMD) and its rates.
#[derive(Clone, Copy, Debug, Default)]
struct Target {
    wgp: u64,
    /// The traced SIMD's locations are `unit << 5 ..`: one compare tells a token's wave is traced.
    unit: usize,
    dprate: u32,
    derate: u32,
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
    /// By [`location_index`]: every wave slot of the shader engine, with the PC its last wave
    /// started at, live while that wave runs.
    locations: StampedTable<Pc, { 1 << 12 }>,
    waves: TargetWaves,
    /// HEADER bit 43 (version 4+): the trace streams through a double buffer, so occupancy is
    /// handed over in batches as it accumulates instead of once at the end of the buffer.
    double_buffer: bool,
    /// Packets were lost since the previous parsed token.
    packet_lost: bool,
    /// What is known of the order of the occupancy records pooled since the buffer's start: in
    /// time order (their batch needs no sort), as they are stamped with the times of their
    /// tokens, which the clock only advances, unless a TIMESTAMP's long delta wrapped it
    /// ([`RdnaDecoder::add_long_delta`]) or a packet loss ended a wave a cycle before its
    /// token.
    occupancy_order: OccupancyOrder,
    /// gfx10/11 reorder queue (SQTT_FORMAT §1.3).
    queue: ReorderQueue,
    generation: std::marker::PhantomData<G>,
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
            locations: StampedTable::default(),
            waves: TargetWaves::default(),
            double_buffer: false,
            packet_lost: false,
            occupancy_order: OccupancyOrder::InTimeOrder,
            queue: ReorderQueue::default(),
            generation: std::marker::PhantomData,
        }
    }
}

impl<G: Generation> Recycle for RdnaDecoder<G> {
    fn recycle(&mut self) -> bool {
        self.locations.reset();
        self.waves.reset();
        self.queue.clear();
        true
    }
}

/// Buffers of at least this many nibbles are long enough for the walk's own deltas to add up
/// to 2^63: a token is at least a nibble long and adds less than a TIMESTAMP's inline limit
/// ([`crate::arch::table::TimestampFields::inline_delta_limit`]) or 2^17 (a delta field of at
/// most 16 bits, a TIME's 4 cycles). The longer TIMESTAMP deltas go through
/// [`RdnaDecoder::add_long_delta`].
const fn clock_wrap_nibbles(arch: &RdnaArch) -> u64 {
    let limit = arch.fields.timestamp.inline_delta_limit();
    (i64::MAX as u64) / if limit > 1 << 17 { limit } else { 1 << 17 }
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
            occupancy_order,
            queue: _,
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
        *occupancy_order = OccupancyOrder::InTimeOrder;
    }

    fn decode(&mut self, session: &mut Session<'_>, data: &[u8]) {
        if data.len() as u64 * 2 >= clock_wrap_nibbles(G::ARCH) {
            self.occupancy_order = OccupancyOrder::Unknown;
        }
        self.walk(session, data);
        self.finish(session);
    }

    fn finish(&mut self, session: &mut Session<'_>) {
        let rules = self.rules;
        // As the reference at a cut: the buffer's pooled batches go out before the waves left
        // unfinished (and so before their WAVE_INCOMPLETE record).
        session.emitter.flush_occupancy(self.occupancy_order);
        session.emitter.flush_buffer_end();
        self.waves.finish_unfinished(session, &rules);
        let registers = &self.registers;
        session.finish_buffer(|address| registers.translate_from_start(address));
    }
}

#[cfg(test)]
mod tests;

//! gfx9 / CDNA (gfx90a, gfx942, gfx950): the 16-bit word stream after the 8-byte software
//! header (SQTT_FORMAT §1.7, §2, §3.4; ERRATA part 2).
//!
//! [`decode`] runs a [`Parser`] over one buffer: [`handlers`] walks the tokens and applies each
//! (ISSUE/INST to the traced waves of [`wave`], MISC events, register writes), [`occupancy`]
//! follows WAVE_START/WAVE_END, [`perf`] collects the counter samples.

mod handlers;
mod header;
mod occupancy;
mod perf;
#[cfg(test)]
mod tests;
pub mod tokens;
mod wave;

use crate::arch::locations::LocationTable;
use crate::arch::registers::Registers;
use crate::error::{DecodeError, ErrorKind};
use crate::records::{Event, Pc, PerfEvent, RecordKind};
use crate::sink::POOL_LIMIT;
use crate::spare::{keep_largest, Recycle, Spare};
use crate::wave::Session;
use crate::wave::{StitchRules, WaveIdentity};
pub use header::Gfx9Header;
use occupancy::LOCATIONS;
use perf::{PERF_BANKS, PERF_CUS};
use wave::Gfx9Wave;

/// The timing model's CYCLE_START_PHASE at the start of every SE buffer: the reference's parser
/// initialises its counter to 15 (`gfx9/gfx9wave.h`, `MISQTTParser`). Only the value mod 4 is
/// ever read (docs/timing/gfx9.md, rule T4).
const INITIAL_CYCLE_START_PHASE: i64 = 15;

const SIMDS: usize = 4;
const SLOTS: usize = 10;

/// Decodes one gfx9 SE buffer; `tokens` is the buffer after its 8-byte header.
pub fn decode(session: &mut Session<'_>, header: u64, tokens: &[u8]) -> Result<(), DecodeError> {
    let mut parser = Parser::for_buffer(Gfx9Header::parse(header));
    let result = parser.run(session, tokens);
    parser.finish(session);
    result
}

/// At most this many entries' worth of wave buffers (about 32 MB) stay with the thread between
/// calls: enough for the 32 waves of 8 k records each of a HipKittens GEMM's SE buffer, whose
/// next call then allocates nothing (with a quarter of this, two thirds of its waves grew fresh
/// buffers every call, and the page faults and copies made its decode 45 % slower).
const RETAINED_ENTRIES: usize = 1 << 20;

thread_local! {
    static SPARE_PARSER: std::cell::Cell<Option<Box<Parser>>> =
        const { std::cell::Cell::new(None) };
}

/// A thread keeps one parser between its parse calls (rocprofv3 makes one per SE buffer), so
/// that a call neither builds nor tears one down, and what it holds is not grown again from
/// empty: the wave buffers (a busy wave holds thousands of records, and growing fresh arrays for
/// every buffer costs more in page faults and copies than decoding the buffer's tokens does; the
/// boxes move between the wave slots and `spare_waves` without copying a wave) and the occupancy
/// location table (allocating and zeroing its groups again cost a small buffer's call more than
/// its tokens).
struct Parser {
    header: Gfx9Header,
    registers: Registers,
    /// Boxed: moving 40 inline waves in and out of their slots would copy them.
    waves: [[Option<Box<Gfx9Wave>>; SLOTS]; SIMDS],
    /// How many of `waves` hold a wave: the end of a buffer without traced waves (most small
    /// traces' buffers) does not visit the 40 slots.
    live_waves: usize,
    /// Start PC of each running wave location (occupancy), one group per CU.
    running: LocationTable<Option<Pc>, 128>,
    /// The SE-wide CYCLE_START_PHASE counter of the timing model.
    phase_counter: i64,
    packet_lost: bool,
    counter_interval: u64,
    perf: Vec<PerfEvent>,
    perf_last_time: [[i64; PERF_BANKS]; PERF_CUS],
    /// Some `perf_last_time` was written since the table was last emptied: most buffers have
    /// no timed perf samples, and emptying it at every buffer's start cost each call about 50
    /// instructions.
    perf_times_written: bool,
    /// The buffers of emitted waves, for the next waves of this buffer or a later one.
    #[allow(clippy::vec_box)]
    spare_waves: Vec<Box<Gfx9Wave>>,
    /// [`Parser::finish`] emptied the wave slots (a call that panicked may not have).
    finished: bool,
}

impl Default for Parser {
    fn default() -> Self {
        Parser {
            header: Gfx9Header::parse(0),
            registers: Registers::default(),
            waves: Default::default(),
            live_waves: 0,
            running: LocationTable::new(LOCATIONS),
            phase_counter: INITIAL_CYCLE_START_PHASE,
            packet_lost: false,
            counter_interval: 0,
            perf: Vec::new(),
            perf_last_time: [[0; PERF_BANKS]; PERF_CUS],
            perf_times_written: false,
            spare_waves: Vec::new(),
            finished: true,
        }
    }
}

/// Empties the location table, the wave slots and the perf samples; keeps the largest wave
/// buffers up to [`RETAINED_ENTRIES`] in all, the others are freed.
impl Recycle for Parser {
    fn recycle(&mut self) -> bool {
        if !self.finished {
            let left = self.waves.iter_mut().flatten().filter_map(Option::take);
            self.spare_waves.extend(left);
            self.live_waves = 0;
        }
        self.running.reset();
        // Kept no larger than a full batch, as the emitter's pools: a huge buffer's samples do
        // not stay with the thread.
        if self.perf.capacity() > POOL_LIMIT {
            self.perf = Vec::new();
        }
        self.perf.clear();
        keep_largest(&mut self.spare_waves, RETAINED_ENTRIES, |w| w.capacity());
        true
    }
}

impl Parser {
    /// The thread's parser, set up for a buffer with this header.
    fn for_buffer(header: Gfx9Header) -> Spare<Self> {
        let mut parser = Spare::take(&SPARE_PARSER);
        parser.begin(header);
        parser
    }

    /// The state of one buffer's start; the tables were emptied by [`Recycle::recycle`]. Every
    /// field is named, so that a new one cannot be left out.
    fn begin(&mut self, header: Gfx9Header) {
        let Parser {
            header: this_header,
            registers,
            waves: _,
            live_waves: _,
            running: _,
            phase_counter,
            packet_lost,
            counter_interval,
            perf: _,
            perf_last_time,
            perf_times_written,
            spare_waves: _,
            finished,
        } = self;
        *this_header = header;
        *registers = Registers::default();
        *phase_counter = INITIAL_CYCLE_START_PHASE;
        *packet_lost = false;
        *counter_interval = 0;
        if std::mem::take(perf_times_written) {
            *perf_last_time = [[0; PERF_BANKS]; PERF_CUS];
        }
        *finished = false;
    }

    /// A new target wave in `[simd][slot]`, reusing the buffers of an emitted one.
    fn start_wave(
        &mut self,
        simd: usize,
        slot: usize,
        dispatcher: u8,
        workgroup: u8,
        pc: Pc,
        t: i64,
    ) {
        let id = WaveIdentity {
            cu: self.header.target_cu,
            simd: simd as u8,
            wave_id: slot as u8,
            dispatcher,
            workgroup_id: workgroup,
            cluster_id: 0,
        };
        let mut w = self.spare_waves.pop().unwrap_or_default();
        w.restart(id, pc, t);
        debug_assert!(self.waves[simd][slot].is_none());
        self.waves[simd][slot] = Some(w);
        self.live_waves += 1;
    }

    /// Hands a finished (or abandoned) wave to the shared stitcher and emitter.
    fn emit_wave(&mut self, session: &mut Session<'_>, mut w: Box<Gfx9Wave>) {
        if session.emitter.wants(RecordKind::Wave) {
            if !w.wave.complete {
                w.cut_short();
            }
            for slot in &mut w.wave.slots {
                // Start PCs not resolved at wave start are looked up again (SQTT_FORMAT §2.3).
                slot.pc = slot.pc.map(|pc| late_resolve(&self.registers, pc));
            }
            w.wave.unfinished = w.may_hold_unfinished();
            crate::wave::emit_wave(session, &mut w.wave, &StitchRules::GFX9);
        }
        self.spare_waves.push(w);
    }

    /// End of the buffer: the pooled batches, then the waves the stream cut short (completed
    /// waves went out at their WAVE_END), as the reference orders them, then the perf samples.
    fn finish(&mut self, session: &mut Session<'_>) {
        self.close_perf_intervals();
        self.flush_occupancy(session);
        session.emitter.flush_buffer_end();
        if self.live_waves > 0 {
            for simd in 0..SIMDS {
                for slot in 0..SLOTS {
                    if let Some(w) = self.waves[simd][slot].take() {
                        self.emit_wave(session, w);
                    }
                }
            }
            self.live_waves = 0;
        }
        self.hand_over_perf(session);
        let registers = &self.registers;
        session.finish_buffer(|address| registers.translate_from_start(address));
        self.finished = true;
    }
}

/// A raw start address is resolved again against the code objects loaded "from start".
fn late_resolve(registers: &Registers, pc: Pc) -> Pc {
    if pc.code_object_id == 0 && pc.address != 0 {
        registers.translate_from_start(pc.address)
    } else {
        pc
    }
}

fn check_slot(slot: u64) -> Result<usize, ErrorKind> {
    if slot < SLOTS as u64 {
        Ok(slot as usize)
    } else {
        Err(ErrorKind::InvalidWaveSlot)
    }
}

fn emit_event(session: &mut Session<'_>, record: Event) {
    session.emitter.event(&record);
}

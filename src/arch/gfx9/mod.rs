//! gfx9 / CDNA (gfx90a, gfx942, gfx950): the 16-bit word stream after the 8-byte software
//! header (SQTT_FORMAT §1.7, §2, §3.4; ERRATA part 2).

pub(crate) mod tokens;
mod wave;

use crate::arch::locations::LocationTable;
use crate::arch::registers::{self, cs, Registers};
use crate::arch::userdata::{self, UserdataEvent};
use crate::arch::DecodeError;
use crate::records::{
    Dispatch, Event, EventKind, EventPayload, Occupancy, OccupancyFlags, Pc, PerfEvent, Realtime,
    RecordKind, ShaderData, EVENT_FLAG_PER_PIPE,
};
use crate::sink::{Record, POOL_LIMIT};
use crate::spare::{Recycle, Spare};
use crate::wave::Session;
use crate::wave::{StitchRules, WaveIdentity};
use tokens::{Field, Kind, RawToken};
use wave::Gfx9Wave;

/// Fields of the 64-bit software header (SQTT_FORMAT §1.1).
mod header {
    use super::Field;
    pub const VERSION: Field = Field::new(13, 3);
    pub const TARGET_CU: Field = Field::new(20, 5);
    pub const DOUBLE_BUFFER: Field = Field::new(32, 1);
}

/// The timing model's CYCLE_START_PHASE at the start of every SE buffer: the reference's parser
/// initialises its counter to 15 (`gfx9/gfx9wave.h`, `MISQTTParser`). Only the value mod 4 is
/// ever read (docs/timing/gfx9.md, rule T4).
const INITIAL_CYCLE_START_PHASE: i64 = 15;

const SIMDS: usize = 4;
const SLOTS: usize = 10;
/// WAVE_START `count` above this is context save/restore traffic, not a new wave.
const CONTEXT_SWITCH_COUNT: u64 = 64;
/// Occupancy locations: `cu << 7 | simd << 5 | slot` with a 4-bit CU.
const LOCATIONS: usize = 16 << 7;
const PERF_CUS: usize = 16;
const PERF_BANKS: usize = 4;

/// The decoded header of one gfx9 buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gfx9Header {
    /// 4 = MI200 or older (gfx90a), 5 = MI300 (gfx942), 6 = MI350 (gfx950).
    pub version: u8,
    /// The CU whose instructions are traced (5 bits; token CU fields have 4).
    pub target_cu: u8,
    pub double_buffer: bool,
}

impl Gfx9Header {
    pub fn parse(h: u64) -> Self {
        Gfx9Header {
            version: header::VERSION.get(h) as u8,
            target_cu: header::TARGET_CU.get(h) as u8,
            double_buffer: header::DOUBLE_BUFFER.get(h) != 0,
        }
    }
}

/// Decodes one gfx9 SE buffer; `tokens` is the buffer after its 8-byte header.
pub fn decode(session: &mut Session<'_>, header: u64, tokens: &[u8]) -> Result<(), DecodeError> {
    let mut parser = Parser::new(Gfx9Header::parse(header));
    let result = parser.run(session, tokens);
    parser.finish(session);
    result
}

/// What a parser leaves for the next one on its thread (rocprofv3 makes one parse call per SE
/// buffer). Wave buffers: a busy wave holds thousands of records, and growing fresh arrays for
/// every buffer costs more in page faults and copies than decoding the buffer's tokens does; the
/// boxes move between the parser's waves and here without copying a wave. The occupancy location
/// table: allocating and zeroing its groups again cost a small buffer's parse call more than its
/// tokens.
#[derive(Default)]
struct WaveBuffers {
    #[allow(clippy::vec_box)]
    waves: Vec<Box<Gfx9Wave>>,
    running: Option<LocationTable<Option<Pc>, 128>>,
}

/// At most this many entries' worth of buffers (about 8 MB) stay with the thread between calls.
const RETAINED_ENTRIES: usize = 1 << 18;

/// Resets the location table; keeps the largest wave buffers up to [`RETAINED_ENTRIES`] in all,
/// the others are freed.
impl Recycle for WaveBuffers {
    fn recycle(&mut self) -> bool {
        if let Some(running) = &mut self.running {
            running.reset();
        }
        self.waves
            .sort_unstable_by_key(|w| std::cmp::Reverse(w.capacity()));
        let mut retained = 0;
        self.waves.retain(|w| {
            let fits = retained + w.capacity() <= RETAINED_ENTRIES;
            retained += if fits { w.capacity() } else { 0 };
            fits
        });
        true
    }
}

thread_local! {
    static SPARE_WAVES: std::cell::Cell<Option<Box<WaveBuffers>>> =
        const { std::cell::Cell::new(None) };
}

/// The parser as the token reader's visitor, for one buffer of a session.
struct ParserVisitor<'p, 's, 'a> {
    parser: &'p mut Parser,
    session: &'s mut Session<'a>,
}

impl tokens::Visitor for ParserVisitor<'_, '_, '_> {
    #[inline(always)]
    fn issue(&mut self, value: u64, time: i64) {
        self.parser.issue(value, time);
    }

    #[inline(always)]
    fn inst(&mut self, value: u64, time: i64) -> Result<(), ()> {
        self.parser.inst(value, time)
    }

    fn other(&mut self, token: &RawToken, time: i64) -> Result<(), ()> {
        self.parser.token(self.session, token, time)
    }
}

/// gfx9 dispatches count SGPRs from PGM_RSRC1, like RDNA trace version 0.
const GFX9_TRACE_VERSION: u8 = 0;

/// Byte offset of the token area within the SE buffer.
const HEADER_BYTES: usize = 8;

struct Parser {
    header: Gfx9Header,
    registers: Registers,
    /// Boxed: a parser is created per SE buffer, and moving 40 inline waves costs more than a
    /// small buffer's decode.
    waves: [[Option<Box<Gfx9Wave>>; SLOTS]; SIMDS],
    /// Start PC of each running wave location (occupancy), one group per CU.
    running: LocationTable<Option<Pc>, 128>,
    /// The SE-wide CYCLE_START_PHASE counter of the timing model.
    phase_counter: i64,
    packet_lost: bool,
    counter_interval: u64,
    perf: Vec<PerfEvent>,
    perf_last_time: [[i64; PERF_BANKS]; PERF_CUS],
    /// Reused buffers for handing a wave over.
    spare: Spare<WaveBuffers>,
}

impl Parser {
    fn new(header: Gfx9Header) -> Self {
        let mut spare = Spare::take(&SPARE_WAVES);
        let running = spare
            .running
            .take()
            .unwrap_or_else(|| LocationTable::new(LOCATIONS));
        Parser {
            header,
            registers: Registers::default(),
            waves: Default::default(),
            running,
            phase_counter: INITIAL_CYCLE_START_PHASE,
            packet_lost: false,
            counter_interval: 0,
            perf: Vec::new(),
            perf_last_time: [[0; PERF_BANKS]; PERF_CUS],
            spare,
        }
    }

    fn run(&mut self, session: &mut Session<'_>, data: &[u8]) -> Result<(), DecodeError> {
        let mut visitor = ParserVisitor {
            parser: self,
            session,
        };
        tokens::TimedReader::new(data)
            .visit_all(&mut visitor)
            .map_err(|offset| DecodeError::Corrupt(offset + HEADER_BYTES))
    }

    /// ISSUE: the status of each wave slot of a SIMD.
    #[inline(always)]
    fn issue(&mut self, v: u64, t: i64) {
        let simd = tokens::issue::SIMD.get(v) as usize;
        // Visit only the slots with a non-zero 2-bit status, in slot order.
        let mut statuses = tokens::issue::STATUSES.get(v);
        while statuses != 0 {
            let slot = statuses.trailing_zeros() / 2;
            let status = (statuses >> (2 * slot)) & 3;
            statuses &= !(3 << (2 * slot));
            if let Some(w) = &mut self.waves[simd][slot as usize] {
                w.issue(status, t);
            }
        }
    }

    /// INST: an issued instruction of one wave completes; `Err` for a wave slot above 9.
    #[inline(always)]
    fn inst(&mut self, v: u64, t: i64) -> Result<(), ()> {
        let slot = check_slot(tokens::inst::SLOT.get(v))?;
        let simd = tokens::inst::SIMD.get(v) as usize;
        let inst_type = tokens::inst::TYPE.get(v) as u8;
        if self.waves[simd][slot].is_none() {
            // Lost WAVE_START: the wave is created without a PC.
            self.start_wave(simd, slot, 0, 0, Pc::NONE, t);
        }
        if let Some(w) = &mut self.waves[simd][slot] {
            w.inst(inst_type, t, &mut self.phase_counter);
        }
        Ok(())
    }

    /// Any token but ISSUE and INST; `Err` when it names a wave slot above 9 (corrupt data).
    fn token(&mut self, session: &mut Session<'_>, token: &RawToken, t: i64) -> Result<(), ()> {
        let v = token.value;
        match token.kind {
            Kind::Misc => self.misc(session, v, t),
            Kind::WaveStart => self.wave_start(session, v, t)?,
            Kind::WaveEnd => self.wave_end(session, v, t)?,
            Kind::WaveAlloc => {
                check_slot(tokens::wave::SLOT.get(v))?;
            }
            Kind::InstPc => {
                let slot = check_slot(tokens::inst::SLOT.get(v))?;
                let simd = tokens::inst::SIMD.get(v) as usize;
                let pc = self.registers.translate(tokens::inst::PC.get(v) << 2);
                if let Some(w) = &mut self.waves[simd][slot] {
                    w.new_pc(pc);
                }
            }
            Kind::RegCs | Kind::RegCsPriv => self.reg_cs(session, token, t),
            Kind::Reg => self.reg(session, token, t),
            Kind::ShaderData => {
                let slot = check_slot(tokens::wave::SLOT.get(v))?;
                session.shader_data(ShaderData {
                    time: t,
                    value: tokens::SHADER_DATA.get(v),
                    cu: tokens::wave::CU.get(v) as u8,
                    simd: tokens::wave::SIMD.get(v) as u8,
                    wave_id: slot as u8,
                    flags: 0,
                    reserved: 0,
                });
            }
            Kind::Perf => self.perf(session, v, t),
            // ISSUE and INST have visitor methods of their own.
            Kind::Issue | Kind::Inst => {}
            Kind::Time | Kind::Event | Kind::EventCs | Kind::EventGfx1 => {}
        }
        Ok(())
    }

    fn misc(&mut self, session: &mut Session<'_>, v: u64, t: i64) {
        use tokens::misc;
        let kind = match misc::TYPE.get(v) {
            misc::PACKET_LOST => {
                session.note_data_lost();
                self.packet_lost = true;
                session.marker_packet_loss();
                EventKind::PacketLoss
            }
            misc::SAVE_CONTEXT => {
                for w in self
                    .waves
                    .iter_mut()
                    .flatten()
                    .flatten()
                    .filter(|w| !w.wave.complete)
                {
                    w.request_trap();
                }
                EventKind::SaveContext
            }
            misc::TT_STALL_BEGIN => EventKind::TtStallBegin,
            misc::TT_STALL_END => EventKind::TtStallEnd,
            _ => return,
        };
        emit_event(session, event(kind, t));
    }

    fn wave_start(&mut self, session: &mut Session<'_>, v: u64, t: i64) -> Result<(), ()> {
        use tokens::wave as f;
        let slot = check_slot(f::SLOT.get(v))?;
        let (cu, simd) = (f::CU.get(v) as usize, f::SIMD.get(v) as usize);
        // Unlike register tokens, wave tokens carry `me` untransformed.
        let me = f::ME.get(v) as u8;
        let pipe = f::PIPE.get(v) as u8;
        let workgroup = f::WORKGROUP.get(v) as u8;
        let pc = self.registers.wave_start_pc(me, pipe);
        if self.is_target(cu, v) {
            let entry = &mut self.waves[simd][slot];
            if f::COUNT.get(v) > CONTEXT_SWITCH_COUNT {
                if let Some(w) = entry {
                    w.context_switch(t);
                }
                return Ok(());
            }
            if entry.is_none() {
                self.start_wave(simd, slot, me << 4 | pipe, workgroup, pc, t);
            }
        }
        let location = location(cu, simd, slot);
        if self.running.get(location).is_none() {
            let flags = OccupancyFlags {
                start: true,
                me_id: me,
                pipe_id: pipe,
                is_ext: true,
                workgroup_id: workgroup,
                cluster_id: 0,
            };
            session
                .emitter
                .add(Occupancy::new(pc, t, cu as u8, simd as u8, slot as u8, flags));
        }
        if let Some(running) = self.running.get_mut(location) {
            *running = Some(pc);
        }
        session.marker_wave_start(cu as u8, simd as u8, slot as u8, pc);
        Ok(())
    }

    fn wave_end(&mut self, session: &mut Session<'_>, v: u64, t: i64) -> Result<(), ()> {
        use tokens::wave as f;
        let slot = check_slot(f::SLOT.get(v))?;
        let (cu, simd) = (f::CU.get(v) as usize, f::SIMD.get(v) as usize);
        if self.is_target(cu, v) {
            let entry = &mut self.waves[simd][slot];
            if entry
                .as_ref()
                .is_some_and(|w| w.restored())
            {
                if let Some(mut w) = entry.take() {
                    w.complete(t);
                    self.emit_wave(session, w);
                }
            } else {
                // A traced slot without a wave, or one in a trap: the token is ignored whole
                // (docs/timing/gfx9.md T2).
                return Ok(());
            }
        }
        // A 16-bit WAVE_END carries no me/pipe/workgroup.
        let flags = OccupancyFlags {
            is_ext: true,
            ..Default::default()
        };
        let started = self
            .running
            .get_mut(location(cu, simd, slot))
            .and_then(Option::take);
        match started {
            Some(pc) => {
                let pc = late_resolve(&self.registers, pc);
                session.marker_wave_end(cu as u8, simd as u8, slot as u8, pc);
                session
                    .emitter
                    .add(Occupancy::new(pc, t, cu as u8, simd as u8, slot as u8, flags));
            }
            None if !self.packet_lost => {
                // An end without a start: a start/end pair at time 0, the start first.
                let (cu, simd, slot) = (cu as u8, simd as u8, slot as u8);
                let start = OccupancyFlags {
                    start: true,
                    ..flags
                };
                let emitter = &mut session.emitter;
                emitter.occupancy_first(Occupancy::new(Pc::NONE, 0, cu, simd, slot, start));
                emitter.add(Occupancy::new(Pc::NONE, 0, cu, simd, slot, flags));
            }
            None => {}
        }
        // As the reference: one time-sorted batch per buffer, or full batches when double-buffered.
        if self.header.double_buffer && session.emitter.pending_occupancy().len() >= POOL_LIMIT {
            self.flush_occupancy(session);
        }
        Ok(())
    }

    fn is_target(&self, cu: usize, v: u64) -> bool {
        cu == self.header.target_cu as usize && tokens::wave::SH.get(v) == 0
    }

    fn reg_cs(&mut self, session: &mut Session<'_>, token: &RawToken, t: i64) {
        use tokens::reg_cs as f;
        let v = token.value;
        let me = tokens::me_from_raw(f::ME.get(v));
        let pipe = f::PIPE.get(v) as u8;
        let addr = f::ADDR.get(v) as u16;
        let data = f::DATA.get(v) as u32;
        self.registers.write_cs(me, pipe, addr, data);
        if addr == cs::DISPATCH_INITIATOR && data & 1 != 0 {
            self.dispatch(session, token, t, me, pipe);
        } else if addr == cs::NOWHERE && data == cs::EVENT_CS_PARTIAL_FLUSH {
            let record = Event {
                me_id: me,
                pipe_id: pipe,
                flags: EVENT_FLAG_PER_PIPE,
                byte_offset: (token.offset + HEADER_BYTES) as u64,
                ..event(EventKind::CsPartialFlush, t)
            };
            emit_event(session, record);
        }
    }

    fn dispatch(&mut self, session: &mut Session<'_>, token: &RawToken, t: i64, me: u8, pipe: u8) {
        if !session.emitter.wants(RecordKind::Dispatch) {
            return;
        }
        let record = Dispatch {
            byte_offset: (token.offset + HEADER_BYTES) as u64,
            ..self.registers.dispatch(t, me, pipe, GFX9_TRACE_VERSION)
        };
        session.emitter.single(Record::Dispatch(&record));
    }

    fn reg(&mut self, session: &mut Session<'_>, token: &RawToken, t: i64) {
        use tokens::reg as f;
        let v = token.value;
        if f::ENABLE.get(v) == 0 {
            return;
        }
        let me = tokens::me_from_raw(f::ME.get(v));
        let pipe = f::PIPE.get(v) as u8;
        let data = f::DATA.get(v) as u32;
        match f::ADDR.get(v) {
            registers::USERDATA_3 => {
                if let Some(realtime_clock) = self.registers.write_userdata3(data) {
                    session.emitter.add(Realtime {
                        shader_clock: t,
                        realtime_clock,
                        reserved: 0,
                    });
                }
            }
            userdata::USERDATA_2 => {
                let code_object_event = |kind, id| Event {
                    me_id: me,
                    pipe_id: pipe,
                    payload: EventPayload { raw: id },
                    byte_offset: (token.offset + HEADER_BYTES) as u64,
                    ..event(kind, t)
                };
                match self.registers.write_userdata2(me, pipe, data) {
                    Some(UserdataEvent::CodeObjectLoad(id)) => {
                        emit_event(session, code_object_event(EventKind::CodeObjectLoad, id))
                    }
                    Some(UserdataEvent::CodeObjectUnload(id)) => {
                        emit_event(session, code_object_event(EventKind::CodeObjectUnload, id))
                    }
                    Some(UserdataEvent::RealtimeFrequency(hz)) => session.rt_frequency(hz),
                    Some(UserdataEvent::CounterInterval(cycles)) => self.counter_interval = cycles,
                    None => {}
                }
            }
            _ => {}
        }
    }

    fn perf(&mut self, session: &mut Session<'_>, v: u64, t: i64) {
        use tokens::perf as f;
        if f::SH.get(v) != 0 {
            return;
        }
        let cu = f::CU.get(v) as usize;
        let bank = f::BANK.get(v) as usize;
        let mut sample = PerfEvent {
            time: t - 4 * cu as i64,
            cu: cu as u8,
            bank: bank as u8,
            ..Default::default()
        };
        if self.counter_interval != 0 {
            let last = &mut self.perf_last_time[cu][bank];
            if *last > 0 && sample.time > *last + self.counter_interval as i64 {
                // A gap of more than one interval: an empty sample marks it.
                self.perf.push(sample);
            }
            *last = sample.time;
        }
        let [a, b, c, d] = f::COUNTERS.map(|c| c.get(v) as u16);
        (
            sample.events0,
            sample.events1,
            sample.events2,
            sample.events3,
        ) = (a, b, c, d);
        self.perf.push(sample);
        if self.header.double_buffer && self.perf.len() >= POOL_LIMIT {
            self.hand_over_perf(session);
        }
    }

    /// Perf samples go out after the buffer's other pooled records, or as a full batch.
    fn hand_over_perf(&mut self, session: &mut Session<'_>) {
        for sample in self.perf.drain(..) {
            session.emitter.add(sample);
        }
        session.emitter.flush::<PerfEvent>();
    }

    /// gfx9 occupancy goes out in token order (not sorted, as RDNA's): its tokens are in time
    /// order, and the reference leaves the end of a wave whose start was never seen (time 0)
    /// where it was decoded.
    fn flush_occupancy(&mut self, session: &mut Session<'_>) {
        for occ in session.emitter.pending_occupancy().iter_mut() {
            if occ.pc.code_object_id == 0 {
                let pc = self.registers.translate_from_start(occ.pc.address);
                if pc.code_object_id != 0 {
                    occ.pc = pc;
                }
            }
        }
        session.emitter.flush::<Occupancy>();
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
        let mut w = self.spare.waves.pop().unwrap_or_default();
        w.restart(id, pc, t);
        self.waves[simd][slot] = Some(w);
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
        self.spare.waves.push(w);
    }

    /// End of the buffer: the pooled batches, then the waves the stream cut short (completed
    /// waves went out at their WAVE_END), as the reference orders them, then the perf samples.
    fn finish(&mut self, session: &mut Session<'_>) {
        if self.counter_interval != 0 {
            for (cu, banks) in self.perf_last_time.iter().enumerate() {
                for (bank, &last) in banks.iter().enumerate().filter(|(_, &l)| l > 0) {
                    let time = last + self.counter_interval as i64;
                    self.perf.push(PerfEvent {
                        time,
                        cu: cu as u8,
                        bank: bank as u8,
                        ..Default::default()
                    });
                }
            }
        }
        self.flush_occupancy(session);
        session.emitter.flush_buffer_end();
        for simd in 0..SIMDS {
            for slot in 0..SLOTS {
                if let Some(w) = self.waves[simd][slot].take() {
                    self.emit_wave(session, w);
                }
            }
        }
        self.hand_over_perf(session);
        let registers = &self.registers;
        session.finish_buffer(|address| registers.translate_from_start(address));
        self.spare.running = Some(std::mem::replace(&mut self.running, LocationTable::new(0)));
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

fn check_slot(slot: u64) -> Result<usize, ()> {
    if slot < SLOTS as u64 {
        Ok(slot as usize)
    } else {
        Err(())
    }
}

fn location(cu: usize, simd: usize, slot: usize) -> usize {
    (cu << 7 | simd << 5 | slot) & (LOCATIONS - 1)
}

fn event(kind: EventKind, t: i64) -> Event {
    Event {
        size: std::mem::size_of::<Event>() as u64,
        time: t,
        kind: kind as u32,
        ..Default::default()
    }
}

fn emit_event(session: &mut Session<'_>, record: Event) {
    session.emitter.event(&record);
}

#[cfg(test)]
mod tests {
    use super::tokens::encode::Encoder;
    use super::tokens::{inst, issue, perf, reg, reg_cs, wave as wf, DELTA, SHADER_DATA};
    use super::*;
    use crate::isa::{IsaError, IsaProvider};
    use crate::records::{Category, Inst, Wave, WaveState};
    use crate::sink::{Emitter, Filter};

    /// Every address holds a 4-byte SALU instruction; the queried PCs are recorded. Every code
    /// object has the funcmap in `.1`, if any.
    #[derive(Default)]
    struct SaluEverywhere(
        Vec<Pc>,
        Option<std::sync::Arc<crate::isa::funcmap::Funcmap>>,
    );

    impl IsaProvider for SaluEverywhere {
        fn funcmap(&mut self, _: u64) -> Option<std::sync::Arc<crate::isa::funcmap::Funcmap>> {
            self.1.clone()
        }
        fn has_funcmaps(&self) -> bool {
            self.1.is_some()
        }

        fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
            self.0.push(pc);
            text.clear();
            text.extend_from_slice(b"s_mov_b32 s0, 0");
            Ok(4)
        }
    }

    #[derive(Debug, Default)]
    struct Decoded {
        /// Record types in callback order.
        order: Vec<RecordKind>,
        perf: Vec<PerfEvent>,
        shader_data: Vec<ShaderData>,
        gfxip: Vec<u32>,
        occupancy: Vec<Occupancy>,
        /// (wave record, its instructions, its timeline)
        waves: Vec<(Wave, Vec<Inst>, Vec<WaveState>)>,
        events: Vec<Event>,
        realtime: Vec<Realtime>,
        markers: Vec<crate::records::Marker>,
    }

    fn decode(
        header: u64,
        tokens: &[u8],
        isa: &mut SaluEverywhere,
    ) -> (Decoded, Result<(), DecodeError>) {
        let mut out = Decoded::default();
        let mut data = header.to_le_bytes().to_vec();
        data.extend_from_slice(tokens);
        let mut sink = |r: Record<'_>| {
            out.order.push(r.kind());
            match r {
                Record::PerfEvent(rows) => out.perf.extend_from_slice(rows),
                Record::ShaderData(rows) => out.shader_data.extend_from_slice(rows),
                Record::Gfxip(v) => out.gfxip.push(v),
                Record::Occupancy(rows) => out.occupancy.extend_from_slice(rows),
                Record::Wave(w) => {
                    // SAFETY: the arrays are valid for the duration of the callback.
                    let insts = match w.instructions_size {
                        0 => Vec::new(),
                        n => {
                            unsafe { std::slice::from_raw_parts(w.instructions_array, n as usize) }
                                .to_vec()
                        }
                    };
                    let timeline = match w.timeline_size {
                        0 => Vec::new(),
                        n => unsafe { std::slice::from_raw_parts(w.timeline_array, n as usize) }
                            .to_vec(),
                    };
                    out.waves.push((*w, insts, timeline));
                }
                Record::Event(e) => out.events.push(*e),
                Record::Realtime(rows) => out.realtime.extend_from_slice(rows),
                Record::Marker(rows) => out.markers.extend_from_slice(rows),
                _ => {}
            }
            0
        };
        let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), isa);
        let result = session.decode_buffer(&data);
        drop(session);
        (out, result)
    }

    /// `legacy 0x11 | version << 13 | all SIMDs << 16 | dcu << 20`.
    fn header(version: u64, dcu: u64) -> u64 {
        0x11 | version << 13 | 0xF << 16 | dcu << 20
    }

    /// Token builders following SQTT_FORMAT §1.7 (`step` sets the bit-4 time increment).
    trait Tokens {
        fn wave_start(&mut self, cu: u64, simd: u64, slot: u64, me: u64, pipe: u64) -> &mut Self;
        fn wave_end(&mut self, cu: u64, simd: u64, slot: u64) -> &mut Self;
        fn issue(&mut self, simd: u64, slot: u64, status: u64) -> &mut Self;
        fn inst(&mut self, simd: u64, slot: u64, inst_type: u64) -> &mut Self;
        fn reg_cs_priv(&mut self, me_raw: u64, pipe: u64, addr: u64, data: u64) -> &mut Self;
        fn userdata2(&mut self, me_raw: u64, pipe: u64, data: u64) -> &mut Self;
    }

    impl Tokens for Encoder {
        fn wave_start(&mut self, cu: u64, simd: u64, slot: u64, me: u64, pipe: u64) -> &mut Self {
            let f = [
                (DELTA, 1),
                (wf::CU, cu),
                (wf::SIMD, simd),
                (wf::SLOT, slot),
                (wf::ME, me),
                (wf::PIPE, pipe),
            ];
            self.token(3, 2, &f)
        }
        fn wave_end(&mut self, cu: u64, simd: u64, slot: u64) -> &mut Self {
            self.token(
                6,
                1,
                &[(DELTA, 1), (wf::CU, cu), (wf::SIMD, simd), (wf::SLOT, slot)],
            )
        }
        fn issue(&mut self, simd: u64, slot: u64, status: u64) -> &mut Self {
            self.token(
                13,
                2,
                &[
                    (DELTA, 1),
                    (issue::SIMD, simd),
                    (issue::STATUSES, status << (2 * slot)),
                ],
            )
        }
        fn inst(&mut self, simd: u64, slot: u64, inst_type: u64) -> &mut Self {
            self.token(
                10,
                1,
                &[
                    (DELTA, 1),
                    (inst::SIMD, simd),
                    (inst::SLOT, slot),
                    (inst::TYPE, inst_type),
                ],
            )
        }
        fn reg_cs_priv(&mut self, me_raw: u64, pipe: u64, addr: u64, data: u64) -> &mut Self {
            self.token(
                15,
                3,
                &[
                    (reg_cs::ME, me_raw),
                    (reg_cs::PIPE, pipe),
                    (reg_cs::ADDR, addr),
                    (reg_cs::DATA, data),
                ],
            )
        }
        fn userdata2(&mut self, me_raw: u64, pipe: u64, data: u64) -> &mut Self {
            let f = [
                (reg::ME, me_raw),
                (reg::PIPE, pipe),
                (reg::ENABLE, 1),
                (reg::ADDR, 0xC342),
                (reg::DATA, data),
            ];
            self.token(2, 4, &f)
        }
    }

    /// Kernel entry 0x7F00_0000_1800 on (me 1, pipe 0): REG me_raw 0 is me 1.
    fn program(e: &mut Encoder, entry: u64) {
        e.reg_cs_priv(0, 0, cs::PGM_LO as u64, (entry >> 8) & 0xFFFF_FFFF);
        e.reg_cs_priv(0, 0, cs::PGM_HI as u64, entry >> 40);
    }

    /// One wave on `cu`, simd 1, slot 2, then its end 52 cycles later; only the traced CU
    /// sends instruction tokens (an SALU: ISSUE, then INST).
    fn one_wave(e: &mut Encoder, cu: u64, traced: bool) {
        e.wave_start(cu, 1, 2, 1, 0);
        if traced {
            e.issue(1, 2, 2).inst(1, 2, 1);
        } else {
            e.misc(2, 0);
        }
        e.misc(10, 0).wave_end(cu, 1, 2);
    }

    #[test]
    fn the_header_cu_selects_the_traced_waves() {
        const ENTRY: u64 = 0x7F00_0000_1800;
        let mut e = Encoder::default();
        program(&mut e, ENTRY);
        one_wave(&mut e, 3, false);
        one_wave(&mut e, 2, true);
        let (out, result) = decode(header(6, 2), &e.bytes, &mut SaluEverywhere::default());
        assert_eq!(result, Ok(()));
        assert_eq!(out.gfxip, [9]);
        // Occupancy for both CUs, sorted by time, PC = the kernel entry.
        let rows: Vec<_> = out
            .occupancy
            .iter()
            .map(|o| (o.cu, o.is_start(), o.time, o.pc))
            .collect();
        let pc = Pc::new(ENTRY, 0);
        assert_eq!(
            rows,
            [
                (3, true, 4, pc),
                (3, false, 56, pc),
                (2, true, 60, pc),
                (2, false, 112, pc)
            ]
        );
        // Only CU 2 is traced: one wave, its SALU stitched at the entry.
        assert_eq!(out.waves.len(), 1);
        let (w, insts, timeline) = &out.waves[0];
        assert_eq!(
            (w.cu, w.simd, w.wave_id, w.begin_time, w.end_time),
            (2, 1, 2, 60, 112)
        );
        assert_eq!(w.dispatcher, 1 << 4);
        assert_eq!(insts.len(), 1);
        assert_eq!(
            (insts[0].category(), insts[0].time, insts[0].pc),
            (Category::Salu as u8, 64, pc)
        );
        let spans: Vec<_> = timeline.iter().map(|s| (s.kind, s.duration)).collect();
        assert_eq!(
            spans,
            [(1, 4), (2, 48)],
            "IDLE until the issue, EXEC until the end"
        );
    }

    #[test]
    fn a_cu_above_15_is_never_traced() {
        // tinygrad writes the SE number at bit 24: DCU 16 for odd SEs, which no 4-bit CU field
        // can name.
        let mut e = Encoder::default();
        one_wave(&mut e, 0, false);
        let (out, _) = decode(header(4, 16), &e.bytes, &mut SaluEverywhere::default());
        assert!(out.waves.is_empty());
        assert_eq!(out.occupancy.len(), 2);
        // With DCU 0 the same wave is traced: a WAVE record without instructions.
        let (out, _) = decode(header(4, 0), &e.bytes, &mut SaluEverywhere::default());
        assert_eq!(out.waves.len(), 1);
        let (w, insts, timeline) = &out.waves[0];
        assert!(insts.is_empty() && w.instructions_array.is_null());
        let spans: Vec<_> = timeline.iter().map(|s| (s.kind, s.duration)).collect();
        assert_eq!(spans, [(1, 52)], "one IDLE span from start to end");
    }

    #[test]
    fn gfx90a_gfx942_and_gfx950_headers_decode_alike() {
        let mut e = Encoder::default();
        program(&mut e, 0x7F00_0000_1800);
        one_wave(&mut e, 0, true);
        let mut outputs = Vec::new();
        for version in [4, 5, 6] {
            let (out, result) =
                decode(header(version, 0), &e.bytes, &mut SaluEverywhere::default());
            assert_eq!(result, Ok(()));
            assert_eq!(out.waves.len(), 1);
            outputs
                .push(format!("{out:?}").replace(|c: char| c == 'x' || c.is_ascii_hexdigit(), ""));
        }
        // Record contents agree (pointer values aside).
        assert!(outputs.windows(2).all(|w| w[0] == w[1]));
        let (_, result) = decode(header(7, 0), &e.bytes, &mut SaluEverywhere::default());
        assert_eq!(result, Err(DecodeError::UnknownHeader));
    }

    #[test]
    fn each_dispatcher_keeps_its_own_kernel_entry() {
        let mut e = Encoder::default();
        program(&mut e, 0x7F00_0000_1800);
        // me_raw 1 is me 0: a second kernel on (me 0, pipe 1).
        e.reg_cs_priv(
            1,
            1,
            cs::PGM_LO as u64,
            (0x7F00_0000_4000 >> 8) & 0xFFFF_FFFF,
        );
        e.reg_cs_priv(1, 1, cs::PGM_HI as u64, 0x7F00_0000_4000 >> 40);
        e.wave_start(5, 0, 0, 1, 0)
            .wave_start(5, 0, 1, 0, 1)
            .wave_end(5, 0, 0)
            .wave_end(5, 0, 1);
        let (out, _) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
        let starts: Vec<_> = out
            .occupancy
            .iter()
            .filter(|o| o.is_start())
            .map(|o| o.pc.address)
            .collect();
        assert_eq!(starts, [0x7F00_0000_1800, 0x7F00_0000_4000]);
        let me_pipe: Vec<_> = out
            .occupancy
            .iter()
            .filter(|o| o.is_start())
            .map(|o| (o.flags().me_id, o.flags().pipe_id))
            .collect();
        assert_eq!(me_pipe, [(1, 0), (0, 1)]);
    }

    #[test]
    fn code_object_markers_make_pcs_relative() {
        const BASE: u64 = 0x7FA3_5940_C000;
        let mut e = Encoder::default();
        program(&mut e, BASE + 0x1800);
        e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
        e.userdata2(0, 0, 0x0008_0201);
        for (kind, word) in [
            (2, BASE & 0xFFFF_FFFF),
            (3, BASE >> 32),
            (1, 0x5000),
            (4, 0),
        ] {
            e.userdata2(0, 0, 4 | kind << 8).userdata2(0, 0, word);
        }
        // TAIL: load, from start, legacy id 4.
        e.userdata2(0, 0, 4).userdata2(0, 0, 4 << 2 | 2);
        one_wave(&mut e, 0, true);
        let mut isa = SaluEverywhere::default();
        let (out, _) = decode(header(6, 0), &e.bytes, &mut isa);
        let entry = Pc::new(0x1800, 4);
        assert!(out.occupancy.iter().all(|o| o.pc == entry));
        assert_eq!(out.waves[0].1[0].pc, entry);
        assert_eq!(
            isa.0.first(),
            Some(&entry),
            "the ISA callback is asked with {{vaddr, id}}"
        );
        let loads: Vec<_> = out
            .events
            .iter()
            .filter(|e| e.kind == EventKind::CodeObjectLoad as u32)
            .collect();
        assert_eq!(loads.len(), 1);
        // SAFETY: every variant of the payload union is a plain 8-byte value.
        assert_eq!(unsafe { loads[0].payload.code_object_id }, 4);
    }

    /// docs/timing/stitch.md §6: a code object whose range overlaps one loaded before it is
    /// loaded (and reported) but translates nothing; the wave's PCs stay raw, with id 0.
    #[test]
    fn a_code_object_overlapping_an_earlier_one_leaves_pcs_raw() {
        const FIRST: u64 = 0x7F4C_EF62_0000;
        const KERNEL: u64 = 0x7F4C_ED42_0000;
        let mut e = Encoder::default();
        program(&mut e, KERNEL + 0x8600);
        e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
        // The rocprofv2-era tool writes the low size again as SIZE_HI (ranges of ~2^47 bytes).
        for (id, base, size) in [(2, FIRST, 0x8000), (10, KERNEL, 0x1_34B1)] {
            for (kind, word) in [(1, size), (4, size), (2, base & 0xFFFF_FFFF), (3, base >> 32)] {
                e.userdata2(0, 0, 4 | kind << 8).userdata2(0, 0, word);
            }
            e.userdata2(0, 0, 4).userdata2(0, 0, id << 2 | 2);
        }
        one_wave(&mut e, 0, true);
        let mut isa = SaluEverywhere::default();
        let (out, _) = decode(header(5, 0), &e.bytes, &mut isa);
        let raw = Pc::new(KERNEL + 0x8600, 0);
        assert!(out.occupancy.iter().all(|o| o.pc == raw));
        assert_eq!(out.waves[0].1[0].pc, raw);
        assert_eq!(isa.0.first(), Some(&raw), "the ISA callback is asked the raw address");
        let loads = out
            .events
            .iter()
            .filter(|e| e.kind == EventKind::CodeObjectLoad as u32)
            .count();
        assert_eq!(loads, 2);
    }

    #[test]
    fn shader_data_words_of_a_marked_kernel_become_markers() {
        const BASE: u64 = 0x7FA3_5940_C000;
        let mut e = Encoder::default();
        program(&mut e, BASE + 0x1800);
        e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
        for (kind, word) in [(2, BASE & 0xFFFF_FFFF), (3, BASE >> 32), (1, 0x5000)] {
            e.userdata2(0, 0, 4 | kind << 8).userdata2(0, 0, word);
        }
        e.userdata2(0, 0, 4).userdata2(0, 0, 4 << 2);
        e.wave_start(3, 1, 2, 1, 0);
        let shader_data = |e: &mut Encoder, value: u64| {
            let f = [
                (wf::CU, 3),
                (wf::SIMD, 1),
                (wf::SLOT, 2),
                (SHADER_DATA, value),
            ];
            e.token(12, 3, &f);
        };
        shader_data(&mut e, 1 << 2 | 2); // enter function 1
        shader_data(&mut e, 1); // bare exit
        e.wave_end(3, 1, 2);
        let funcmap = crate::isa::funcmap::Funcmap::parse(b"F:1:body@k.cpp:7\n");
        let mut isa = SaluEverywhere(Vec::new(), Some(std::sync::Arc::new(funcmap)));
        let (out, _) = decode(header(6, 0), &e.bytes, &mut isa);
        assert_eq!(
            out.shader_data.len(),
            2,
            "SHADERDATA records are still delivered"
        );
        let markers: Vec<_> = out
            .markers
            .iter()
            .map(|m| (m.marker_id, m.marker_kind, m.marker_flags, m.kernel_entry))
            .collect();
        let entry = Pc::new(0x1800, 4);
        assert_eq!(markers, [(1, 1, 2 | 4, entry), (1, 1, 1, entry)]);
        // SAFETY: the test reads the name only while the funcmap is alive.
        let name = unsafe { std::ffi::CStr::from_ptr(out.markers[0].name) };
        assert_eq!(name.to_str(), Ok("body"));
    }

    #[test]
    fn wave_buffers_kept_from_an_earlier_call_start_clean() {
        let mut clean = Encoder::default();
        program(&mut clean, 0x7F00_0000_1800);
        one_wave(&mut clean, 0, true);
        let waves = |bytes: &[u8]| {
            let (out, _) = decode(header(6, 0), bytes, &mut SaluEverywhere::default());
            out.waves
                .into_iter()
                .map(|(w, insts, timeline)| (w.begin_time, w.end_time, w.contexts, insts, timeline))
                .collect::<Vec<_>>()
        };
        let bytes = clean.bytes.clone();
        let fresh = std::thread::spawn(move || waves(&bytes)).join().unwrap();
        // Abandoned waves left mid-trap, with a stall and a placeholder still queued.
        let mut dirty = Encoder::default();
        program(&mut dirty, 0x7F00_0000_1800);
        for slot in 0..4 {
            dirty.wave_start(0, 1, slot, 1, 0);
            dirty
                .issue(1, slot, 1)
                .issue(1, slot, 2)
                .issue(1, slot, 2)
                .inst(1, slot, 1);
        }
        dirty.misc(0, tokens::misc::SAVE_CONTEXT);
        dirty.token(3, 2, &[(wf::SIMD, 1), (wf::SLOT, 2), (wf::COUNT, 100)]);
        waves(&dirty.bytes);
        assert_eq!(waves(&clean.bytes), fresh);
    }

    #[test]
    fn a_wave_slot_above_9_is_corrupt_data_after_the_earlier_records() {
        let mut e = Encoder::default();
        one_wave(&mut e, 0, true);
        let corrupt_at = HEADER_BYTES + e.bytes.len();
        e.wave_end(0, 0, 12);
        one_wave(&mut e, 1, false);
        let (out, result) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
        assert_eq!(result, Err(DecodeError::Corrupt(corrupt_at)));
        assert_eq!(
            out.waves.len(),
            1,
            "the wave completed before the corrupt token is delivered"
        );
        assert_eq!(out.occupancy.len(), 2);
    }

    #[test]
    fn barrier_and_endpgm_messages() {
        // s_waitcnt (immediate), s_barrier (OTHER_MSG + immediate = one IMMED), s_endpgm.
        let mut e = Encoder::default();
        e.wave_start(0, 0, 0, 1, 0);
        e.issue(0, 0, 2).inst(0, 0, 1);
        e.misc(5, 0).issue(0, 0, 3);
        e.issue(0, 0, 2).inst(0, 0, 15).issue(0, 0, 3);
        e.misc(3, 0).issue(0, 0, 2).inst(0, 0, 15).wave_end(0, 0, 0);
        let (out, _) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
        let got: Vec<_> = out.waves[0].1.iter().map(|i| i.category()).collect();
        let (salu, immed, msg) = (
            Category::Salu as u8,
            Category::Immed as u8,
            Category::Message as u8,
        );
        assert_eq!(got, [salu, immed, immed, msg]);
    }

    #[test]
    fn side_records_and_their_order() {
        let mut e = Encoder::default();
        e.userdata2(0, 0, u32::from_le_bytes([0, b'R', b'O', b'C']) as u64);
        // AGENT_INFO: counter interval 100 cycles.
        e.userdata2(0, 0, 6 | 1 << 8 | 100 << 12);
        one_wave(&mut e, 0, true);
        // USERDATA_3 realtime group: header, previous low, high, low.
        for word in [5, 0x10, 0x2, 0x20] {
            e.token(
                2,
                4,
                &[(reg::ENABLE, 1), (reg::ADDR, 0xC343), (reg::DATA, word)],
            );
        }
        // s_ttracedata from CU 3 simd 1 slot 4, then two perf samples of CU 2 bank 1, 400 apart.
        e.token(
            12,
            3,
            &[
                (wf::CU, 3),
                (wf::SIMD, 1),
                (wf::SLOT, 4),
                (SHADER_DATA, 0xDEAD_BEEF),
            ],
        );
        let counters = |a| {
            [
                (perf::CU, 2),
                (perf::BANK, 1),
                (perf::COUNTERS[0], a),
                (perf::COUNTERS[3], 7),
            ]
        };
        e.token(14, 4, &counters(11))
            .misc(100, 0)
            .token(14, 4, &counters(12));
        let (out, result) = decode(header(6, 0), &e.bytes, &mut SaluEverywhere::default());
        assert_eq!(result, Ok(()));
        use RecordKind as K;
        let order: Vec<_> = out
            .order
            .iter()
            .filter(|k| **k != K::Event)
            .copied()
            .collect();
        assert_eq!(
            order,
            [
                K::Gfxip,
                K::Wave,
                K::Occupancy,
                K::Realtime,
                K::ShaderData,
                K::PerfEvent
            ]
        );
        assert_eq!(out.realtime.len(), 1);
        assert_eq!(out.realtime[0].realtime_clock, 2 << 32 | 0x20);
        let sd = out.shader_data[0];
        assert_eq!(
            (sd.value, sd.cu, sd.simd, sd.wave_id, sd.flags),
            (0xDEAD_BEEF, 3, 1, 4, 0)
        );
        // Samples at t - 4·cu, a gap marker one interval after the first (the samples are more
        // than an interval apart), and a closing marker one interval after the last.
        let perf: Vec<_> = out
            .perf
            .iter()
            .map(|p| (p.time, p.cu, p.bank, p.events0, p.events3))
            .collect();
        let (t0, t1) = (perf[0].0, perf[2].0);
        assert_eq!(t1 - t0, 400);
        assert_eq!(
            perf,
            [
                (t0, 2, 1, 11, 7),
                (t1, 2, 1, 0, 0),
                (t1, 2, 1, 12, 7),
                (t1 + 100, 2, 1, 0, 0)
            ]
        );
    }
}

//! The token walk of one buffer: the token reader's visitor, and what ISSUE, INST, MISC,
//! register and shader-data tokens do (WAVE_START/WAVE_END: [`super::occupancy`], PERF:
//! [`super::perf`]).

use super::header::HEADER_BYTES;
use super::tokens::{self, Kind, RawToken};
use super::{check_slot, emit_event, Parser};
use crate::arch::registers::{self, cs};
use crate::arch::userdata::{self, UserdataEvent};
use crate::error::{DecodeError, ErrorKind};
use crate::records::{Event, EventKind, Pc, Realtime, RecordKind, ShaderData, EVENT_FLAG_PER_PIPE};
use crate::sink::Record;
use crate::wave::Session;

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
    fn inst(&mut self, value: u64, time: i64) -> Result<(), ErrorKind> {
        self.parser.inst(value, time)
    }

    fn other(&mut self, token: RawToken, time: i64) -> Result<(), ErrorKind> {
        self.parser.token(self.session, token, time)
    }

    /// Out of line from the quiet stretches' loop, without the six registers `other` saves for
    /// its arms.
    #[inline(always)]
    fn register_write(&mut self, token: RawToken, time: i64) -> Result<(), ErrorKind> {
        self.parser.reg_cs(self.session, token, time);
        Ok(())
    }
}

/// gfx9 dispatches count SGPRs from PGM_RSRC1, like RDNA trace version 0.
const GFX9_TRACE_VERSION: u8 = 0;

impl Parser {
    pub(super) fn run(
        &mut self,
        session: &mut Session<'_>,
        data: &[u8],
    ) -> Result<(), DecodeError> {
        let buffer = session.buffer;
        let mut visitor = ParserVisitor {
            parser: self,
            session,
        };
        tokens::TimedReader::new(data)
            .visit_all(&mut visitor)
            .map_err(|(kind, offset)| DecodeError::new(kind, buffer, offset + HEADER_BYTES))
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
    fn inst(&mut self, v: u64, t: i64) -> Result<(), ErrorKind> {
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
    fn token(
        &mut self,
        session: &mut Session<'_>,
        token: RawToken,
        t: i64,
    ) -> Result<(), ErrorKind> {
        let v = token.value;
        match token.kind() {
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
                let value = tokens::SHADER_DATA.get(v);
                let cu = tokens::wave::CU.get(v) as u8;
                let simd = tokens::wave::SIMD.get(v) as u8;
                session.shader_data(ShaderData::new(t, value, cu, simd, slot as u8, 0));
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
        emit_event(session, Event::new(kind, t, 0, 0, 0, 0, 0));
    }

    #[inline(never)]
    fn reg_cs(&mut self, session: &mut Session<'_>, token: RawToken, t: i64) {
        use tokens::reg_cs as f;
        let v = token.value;
        let me = tokens::me_from_raw(f::ME.get(v));
        let pipe = f::PIPE.get(v) as u8;
        let addr = f::ADDR.get(v) as u16;
        let data = f::DATA.get(v) as u32;
        if addr == cs::DISPATCH_INITIATOR || addr == cs::NOWHERE {
            return self.reg_cs_with_record(session, token, t, (me, pipe, addr, data));
        }
        // Most writes: nothing else to do, and no values to keep across the call.
        self.registers.write_cs(me, pipe, addr, data);
    }

    /// [`Self::reg_cs`] of the two addresses whose writes may make a record: a dispatch, or
    /// a CS_PARTIAL_FLUSH event.
    #[cold]
    #[inline(never)]
    fn reg_cs_with_record(
        &mut self,
        session: &mut Session<'_>,
        token: RawToken,
        t: i64,
        (me, pipe, addr, data): (u8, u8, u16, u32),
    ) {
        self.registers.write_cs(me, pipe, addr, data);
        if addr == cs::DISPATCH_INITIATOR && data & 1 != 0 {
            self.dispatch(session, token, t, me, pipe);
        } else if addr == cs::NOWHERE && data == cs::EVENT_CS_PARTIAL_FLUSH {
            let offset = (token.offset + HEADER_BYTES) as u64;
            let kind = EventKind::CsPartialFlush;
            emit_event(
                session,
                Event::new(kind, t, me, pipe, EVENT_FLAG_PER_PIPE, 0, offset),
            );
        }
    }

    fn dispatch(&mut self, session: &mut Session<'_>, token: RawToken, t: i64, me: u8, pipe: u8) {
        if !session.emitter.wants(RecordKind::Dispatch) {
            return;
        }
        let offset = (token.offset + HEADER_BYTES) as u64;
        let record = self
            .registers
            .dispatch(t, me, pipe, GFX9_TRACE_VERSION, offset);
        session.emitter.single(Record::Dispatch(&record));
    }

    fn reg(&mut self, session: &mut Session<'_>, token: RawToken, t: i64) {
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
                    session
                        .emitter
                        .add(move || Realtime::new(t, realtime_clock));
                }
            }
            userdata::USERDATA_2 => {
                let offset = (token.offset + HEADER_BYTES) as u64;
                let code_object_event = |kind, id| Event::new(kind, t, me, pipe, 0, id, offset);
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
}

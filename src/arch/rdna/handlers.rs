//! What each RDNA token does: the clock, registers and events, wave starts and ends with their
//! occupancy, and the instructions of the traced waves.

use super::fields::{event, header, misc, reg, reg_init, SLOT_MASK};
use super::slots::{location_index, location_of, location_parts, SLOTS};
use super::wave::RdnaWave;
use super::{Generation, RdnaDecoder, Target};
use crate::arch::registers::{dispatcher_index, Registers};
use crate::arch::table::{
    CycleScale, InstEffect, InstInfo, TimestampFields, TokenKind, UnitFields,
};
use crate::arch::userdata::{UserdataEvent, USERDATA_2};
use crate::records::{
    Event, EventKind, InstOtherSimd, Occupancy, OccupancyFlags, Pc, Realtime, ShaderData,
    EVENT_FLAG_BOP, EVENT_FLAG_PER_PIPE,
};
use crate::sink::{OccupancyOrder, Record, POOL_LIMIT};
use crate::wave::{Session, WaveIdentity};

/// WAVE_START counts in this range (one per bit of the two masks) are context save/restore
/// traffic, not new waves; counts 76-89 start waves like any other (rdna.md §4.6).
const CONTEXT_COUNTS: std::ops::Range<u64> = 66..76;
const CONTEXT_SAVE_MASK: u32 = 0b00_0011_0011;
const CONTEXT_RESTORE_MASK: u32 = 0b11_1100_1100;

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
            me: reg::ME.get(w) as u8,
            pipe: reg::PIPE.get(w) as u8,
            compute: reg::COMPUTE.get(w) != 0,
            address: reg::ADDRESS.get(w),
            data: reg::DATA.get(w) as u32,
        }
    }

    /// The 64-bit REG token for this write (`1001` pattern, no time delta).
    pub fn encode(&self) -> u64 {
        0b1001
            | reg::PIPE.place(u64::from(self.pipe))
            | reg::ME.place(u64::from(self.me))
            | reg::COMPUTE.place(u64::from(self.compute))
            | reg::ADDRESS.place(self.address)
            | reg::DATA.place(u64::from(self.data))
    }
}

/// The MISC flags that report something ([`misc::REPORTED`]).
pub(super) fn misc_reports(w: u64) -> u64 {
    misc::FLAGS.get(w) & misc::REPORTED
}

/// REG_INIT of type 2 (DISPATCH_INITIATOR) with the shader-enable bit: the dispatcher
/// `(me & 1, pipe)` that started a dispatch.
pub fn dispatch_initiator(w: u64) -> Option<(u8, u8)> {
    let shader_enabled = reg_init::DATA.get(w) & 1 != 0;
    (reg_init::TYPE.get(w) == reg_init::DISPATCH_INITIATOR && shader_enabled)
        .then_some((reg_init::ME.get(w) as u8, reg_init::PIPE.get(w) as u8))
}

/// The EVENT record of an EVENT token whose id is reported (SQTT_FORMAT §2.5); time and byte
/// offset are left 0.
#[inline]
pub fn event_record(w: u64) -> Option<Event> {
    /// The record kind of each event id (6 bits), `None` where the id reports nothing.
    const KINDS: [Option<EventKind>; 64] = {
        let mut kinds = [None; 64];
        kinds[0x07] = Some(EventKind::CsPartialFlush);
        kinds[0x04] = Some(EventKind::CacheFlush);
        kinds[0x06] = Some(EventKind::CacheFlush);
        kinds[0x14] = Some(EventKind::CacheFlush);
        kinds[0x16] = Some(EventKind::CacheFlush);
        kinds[0x28] = Some(EventKind::BottomOfPipeTs);
        kinds[0x36] = Some(EventKind::TtFlush);
        kinds
    };
    let kind = KINDS[event::ID.get(w) as usize]?;
    let bop = if event::BOP.get(w) != 0 {
        EVENT_FLAG_BOP
    } else {
        0
    };
    let (me, pipe) = (event::ME.get(w) as u8, event::PIPE.get(w) as u8);
    Some(Event::new(
        kind,
        0,
        me,
        pipe,
        EVENT_FLAG_PER_PIPE | bop,
        0,
        0,
    ))
}

impl<G: Generation> RdnaDecoder<G> {
    /// A TIMESTAMP that does more than advance the shader clock. Most are realtime samples,
    /// taken here without a call of their own (so without saving registers); a packet loss, a
    /// TIMESTAMP of another kind, or one that finds an execution report pending in the gfx10/11
    /// queue goes through [`Self::timestamp_in_full`]. An instance for each of the walk's loops,
    /// in which whether samples are averaged is then a constant.
    #[inline(never)]
    pub(super) fn timestamp<const FAST_LOOP: bool>(
        &mut self,
        session: &mut Session<'_>,
        window: u64,
    ) {
        let sample = match G::ARCH.fields.timestamp {
            TimestampFields::Kind { kind, value } => {
                (kind.get(window) == 2).then(|| value.get(window))
            }
            TimestampFields::Flags {
                packet_lost,
                realtime,
                value,
            } => (realtime.get(window) != 0 && packet_lost.get(window) == 0)
                .then(|| value.get(window)),
        };
        match sample {
            Some(value) if !(G::ARCH.reorder_wave_ready && self.exec_report_pending()) => {
                let average = FAST_LOOP != G::ARCH.average_realtime_in_tail;
                self.realtime(session, value, average);
            }
            _ => self.timestamp_in_full(session, window, FAST_LOOP),
        }
    }

    /// [`Self::timestamp`] with every rule.
    #[inline(never)]
    fn timestamp_in_full(&mut self, session: &mut Session<'_>, window: u64, fast_loop: bool) {
        if G::ARCH.reorder_wave_ready {
            self.queue_pending_exec(session);
        }
        let average = fast_loop != G::ARCH.average_realtime_in_tail;
        match G::ARCH.fields.timestamp {
            TimestampFields::Kind { kind, value } => match kind.get(window) {
                1 => self.add_long_delta(value.get(window)),
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
                    self.add_long_delta(value.get(window));
                    if lost {
                        self.packet_loss(session);
                    }
                } else if !lost {
                    self.realtime(session, value.get(window), average);
                }
            }
        }
    }

    /// A TIMESTAMP's long delta taken out of the walk. Token times grow with the stream until
    /// the clock wraps; the walk's own deltas add up to less than 2^63 in a buffer
    /// ([`super::clock_wrap_nibbles`]), so they can only wrap a clock that a long delta left at
    /// 2^63 or more: then, or when the delta wraps it, the occupancy records' order is no
    /// longer known.
    #[inline(always)]
    pub(super) fn add_long_delta(&mut self, delta: u64) {
        let (clock, wrapped) = self.clock.overflowing_add(delta);
        self.clock = clock;
        if wrapped || clock > i64::MAX as u64 {
            self.occupancy_order = OccupancyOrder::Unknown;
        }
    }

    /// A realtime sample; in the averaging loop a sample that does not advance both clocks is
    /// merged into the previous one. (Only pooled samples wait to be handed over, so a pending
    /// one means the pooled mode.)
    #[inline(always)]
    fn realtime(&mut self, session: &mut Session<'_>, value: u64, average: bool) {
        if value == 0 {
            return;
        }
        let shader_clock = self.clock as i64;
        if average {
            if let Some((realtime_clock, last_shader_clock)) =
                session.emitter.last_pending_realtime_clocks()
            {
                // Most samples advance both clocks: the merge is out of line.
                if realtime_clock >= value || last_shader_clock >= shader_clock {
                    return merge_realtime(session, shader_clock, value);
                }
            }
        }
        session
            .emitter
            .add(move || Realtime::new(shader_clock, value));
    }

    #[inline(never)]
    fn packet_loss(&mut self, session: &mut Session<'_>) {
        self.packet_lost = true;
        session.marker_packet_loss();
        session.note_data_lost();
        self.emit_event(
            session,
            EventKind::PacketLoss,
            self.clock as i64,
            0,
            0,
            0,
            0,
        );
    }

    /// The EVENT record of a MISC flag, whose kind and time are all that varies. Inlined into
    /// the walks, which handle MISC tokens: a GC rinse, the usual report, then costs its few
    /// stores and the client's callback, not a call of ours around it as well
    /// (docs/PERFORMANCE.md, twenty-first round).
    #[inline(always)]
    fn flag_event(session: &mut Session<'_>, kind: EventKind, time: i64) {
        let event = Event::new(kind, time, 0, 0, 0, 0, 0);
        session.emitter.event(&event);
    }

    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn emit_event(
        &self,
        session: &mut Session<'_>,
        kind: EventKind,
        time: i64,
        me: u8,
        pipe: u8,
        flags: u16,
        payload: u64,
    ) {
        let event = Event::new(kind, time, me, pipe, flags, payload, 0);
        session.emitter.event(&event);
    }

    #[inline(always)]
    pub(super) fn handle(
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
            TokenKind::Event | TokenKind::EventSync => self.event(session, w, t),
            TokenKind::Misc => self.misc(session, w, t),
            TokenKind::WaveStart => self.wave_start(session, w, t),
            TokenKind::WaveEnd => self.wave_end(session, w, t),
            TokenKind::Inst => self.inst(session, w, t),
            TokenKind::ValuInst => {
                let f = &G::ARCH.fields;
                if let Some(wave) = self
                    .waves
                    .live(f.valu_wave.get(w))
                    .filter(|w| !w.is_trapped())
                {
                    // A wave64 VALU issues as two wave32 halves: one record of two cycles.
                    let cycles = 1 + f.valu_wave64.get(w) as u32;
                    wave.issue(crate::records::Category::Valu, cycles, t);
                }
            }
            TokenKind::ImmOne => {
                let wave = G::ARCH.fields.imm_one_wave.get(w);
                if let Some(wave) = self.waves.live(wave).filter(|w| !w.is_trapped()) {
                    wave.wait_until(t);
                }
            }
            TokenKind::Immediate => self.for_each_untrapped_in_mask(w, |wave| wave.wait_until(t)),
            TokenKind::WaveReady => self.wave_ready(w, t),
            TokenKind::NewPc => {
                let f = &G::ARCH.fields;
                let pc = self.registers.translate(f.new_pc_address.get(w) << 2);
                // A trapped wave's NEW_PC points into the trap handler, which is not recorded. An
                // ended wave was emitted at its WAVE_END: a NEW_PC after it reaches nothing.
                if let Some(wave) = self
                    .waves
                    .live(f.new_pc_wave.get(w))
                    .filter(|w| !w.is_trapped())
                {
                    wave.set_next_pc(pc);
                }
            }
            TokenKind::ShaderData => self.shader_data(session, w, t, false),
            TokenKind::ShaderDataShort => self.shader_data(session, w, t, true),
            _ => {}
        }
        self.packet_lost = false;
    }

    /// WAVE_READY: the waves of its mask stall from `t`. A trapped wave stalls too: the first
    /// record after its return folds that stall in.
    pub(super) fn wave_ready(&mut self, w: u64, t: i64) {
        self.for_each_in_mask(w, |wave| wave.stall_from(t));
    }

    /// IMMEDIATE: bits 8..24 are a mask of wave slots, applied in slot order to the waves that
    /// are not trapped.
    fn for_each_untrapped_in_mask(&mut self, w: u64, mut f: impl FnMut(&mut RdnaWave)) {
        self.for_each_in_mask(w, |wave| {
            if !wave.is_trapped() {
                f(wave)
            }
        });
    }

    /// WAVE_READY: the same mask, applied to trapped waves too.
    fn for_each_in_mask(&mut self, w: u64, f: impl FnMut(&mut RdnaWave)) {
        self.waves.for_each_live_in(SLOT_MASK.get(w) as u32, f);
    }

    #[inline(never)]
    fn header(&mut self, w: u64) {
        let dprate = header::DPRATE.get(w) & G::ARCH.dprate_mask;
        let simd = header::TARGET_SIMD.get(w);
        let (wgp, sa) = (header::TARGET_WGP.get(w), header::TARGET_SA.get(w));
        self.target = Target {
            wgp,
            unit: location_index(sa, wgp, simd, 0) >> 5,
            dprate: if dprate == 0 { 1 } else { 1 << (dprate - 1) },
            derate: 1 << header::DP_DERATE.get(w),
        };
        self.double_buffer = self.version >= 4 && header::DOUBLE_BUFFER.get(w) != 0;
        self.rules.find_tokenless_barrier_waits = G::ARCH
            .header_exclude_barrier_wait
            .is_some_and(|f| f.get(w) != 0);
    }

    #[inline(always)]
    pub(super) fn reg(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let write = RegWrite::decode(w);
        self.write_registers(&write);
        if self.is_userdata2(&write) {
            self.userdata2(session, w, t);
        }
    }

    /// Whether a REG token does anything in [`Self::reg`]: most of a dispatch's writes are to
    /// registers nobody tracks.
    #[inline(always)]
    pub(super) fn reg_matters(&self, w: u64) -> bool {
        let write = RegWrite::decode(w);
        (write.compute && Registers::tracks_cs(write.address as u16)) || self.is_userdata2(&write)
    }

    #[inline(always)]
    pub(super) fn write_registers(&mut self, write: &RegWrite) {
        if write.compute {
            self.registers
                .write_cs(write.me, write.pipe, write.address as u16, write.data);
        }
    }

    /// A USERDATA_2 write, which may report an event or the realtime frequency.
    #[inline(always)]
    pub(super) fn is_userdata2(&self, write: &RegWrite) -> bool {
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
                self.emit_event(session, EventKind::CodeObjectLoad, t, me, pipe, 0, id)
            }
            Some(UserdataEvent::CodeObjectUnload(id)) => {
                self.emit_event(session, EventKind::CodeObjectUnload, t, me, pipe, 0, id)
            }
            Some(UserdataEvent::RealtimeFrequency(hz)) => session.rt_frequency(hz),
            Some(UserdataEvent::CounterInterval(_)) | None => {}
        }
    }

    #[inline(never)]
    fn reg_init(&mut self, session: &mut Session<'_>, w: u64, t: i64, byte_offset: usize) {
        if let Some((me, pipe)) = dispatch_initiator(w) {
            let offset = byte_offset as u64;
            let dispatch = self.registers.dispatch(t, me, pipe, self.version, offset);
            session.emitter.single(Record::Dispatch(&dispatch));
        }
    }

    #[inline(never)]
    fn event(&self, session: &mut Session<'_>, w: u64, t: i64) {
        if let Some(event) = event_record(w) {
            session.emitter.event(&Event { time: t, ..event });
        }
    }

    /// A context save begins: the traced waves are about to be saved, and nothing more is
    /// recorded for them until they return from the trap handler that restores them.
    #[cold]
    fn begin_context_save(&mut self) {
        for slot in 0..SLOTS as u64 {
            if let Some(wave) = self.waves.live(slot) {
                wave.begin_context_save();
            }
        }
    }

    #[inline]
    pub(super) fn misc(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let reported = misc_reports(w);
        if reported == 0 {
            return;
        }
        if reported == misc::GC_RINSE {
            // The usual report, told by one compare.
            return Self::flag_event(session, EventKind::GcRinse, t);
        }
        self.misc_in_full(session, reported, t);
    }

    /// [`Self::misc`] of any other report.
    #[cold]
    #[inline(never)]
    fn misc_in_full(&mut self, session: &mut Session<'_>, reported: u64, t: i64) {
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
        if reported & misc::PACKET_LOST_OR_SPM != 0 {
            if G::ARCH.fields.misc_reports_packet_loss {
                self.packet_loss(session);
            } else {
                Self::flag_event(session, EventKind::SpmSample, t);
            }
        }
        if reported & misc::SAVE_CONTEXT != 0 {
            self.begin_context_save();
        }
        let mut flags = reported & !misc::PACKET_LOST_OR_SPM;
        while flags != 0 {
            if let Some(kind) = FLAG_EVENTS[flags.trailing_zeros() as usize] {
                Self::flag_event(session, kind, t);
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
        session.emitter.add(move || record);
    }

    /// [`Self::wave_start_here`], called: where tokens are handled out of the walk's loop (the
    /// gfx10/11 reorder queue's release), inlined it costs the walk more than the call.
    #[inline(never)]
    pub(super) fn wave_start(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        self.wave_start_here(session, w, t);
    }

    /// Most wave starts are of waves on other SIMDs than the traced one, in a stream that lost
    /// nothing, without markers: their occupancy record (pooled) and location are all there is
    /// to them, and they make no call.
    #[inline(always)]
    pub(super) fn wave_start_here(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let f = &G::ARCH.fields;
        let loc = location_of(&f.wave_start, w);
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
        let (cu, simd, wave) = location_parts(loc);
        let start = Occupancy::new(pc, t, cu, simd, wave, flags);
        if !session.emitter.pool_if_room(start) {
            return self.wave_start_in_full(session, w, t);
        }
        self.locations.set_live(loc, pc);
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
        self.locations.set_live(loc, pc);
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
        if self.packet_lost && self.locations.live(loc).is_some() {
            // Stamped a cycle before its token, maybe before records already pooled.
            self.occupancy_order = OccupancyOrder::Unknown;
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
                builder.start(id, t, pc);
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
        let pc = self.locations.get(loc).unwrap_or(Pc::NONE);
        if CONTEXT_SAVE_MASK >> index & 1 != 0 {
            if target {
                if let Some(w) = self.waves.live(wave) {
                    w.save_context(t);
                }
            }
            let flags = OccupancyFlags::default();
            Self::occupancy(session, pc, t, cu, simd, wave, flags);
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
                        w.start_restored(id, t);
                    }
                }
                if let Some(w) = self.waves.live(wave) {
                    w.restore_context(t);
                }
            }
            let flags = OccupancyFlags {
                start: true,
                ..OccupancyFlags::default()
            };
            Self::occupancy(session, pc, t, cu, simd, wave, flags);
        }
    }

    /// [`Self::wave_end_here`], called (as [`Self::wave_start`]).
    #[inline(never)]
    pub(super) fn wave_end(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        self.wave_end_here(session, w, t);
    }

    /// Most wave ends are of running waves on other SIMDs than the traced one, without markers:
    /// their location stops running and their occupancy record is pooled, without a call.
    #[inline(always)]
    pub(super) fn wave_end_here(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        if self.wave_end_lean(session, w, t) {
            return;
        }
        self.wave_end_in_full(session, w, t)
    }

    /// The lean path of a WAVE_END, if it applies (true): a running wave's end on another SIMD
    /// than the traced one, without markers, pooled where the batch has room. Otherwise it
    /// changes nothing. It reads no packet-loss flag, and writes only the location's state and
    /// the occupancy pool.
    #[inline(always)]
    pub(super) fn wave_end_lean(&mut self, session: &mut Session<'_>, w: u64, t: i64) -> bool {
        let loc = location_of(&G::ARCH.fields.wave_end, w);
        if !self.is_target(loc) && !session.markers_enabled() {
            if let Some(pc) = self.locations.live(loc) {
                let (cu, simd, wave) = location_parts(loc);
                let flags = OccupancyFlags::default();
                let end = Occupancy::new(pc, t, cu, simd, wave, flags);
                if session.emitter.pool_if_room(end) {
                    self.locations.end_live(loc);
                    return true;
                }
            }
        }
        false
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
        let pc = if let Some(pc) = self.locations.live(loc) {
            pc
        } else {
            let flags = OccupancyFlags {
                start: true,
                ..OccupancyFlags::default()
            };
            let start = Occupancy::new(Pc::NONE, 0, cu, simd as u8, wave as u8, flags);
            session.emitter.occupancy_first(start);
            Pc::NONE
        };
        self.locations.end_live(loc);
        session.marker_wave_end(cu, simd as u8, wave as u8, pc);
        Self::occupancy(session, pc, t, cu, simd, wave, OccupancyFlags::default());
        // As the reference: one time-sorted batch per buffer, or full batches when double-buffered.
        if self.double_buffer && session.emitter.pending_occupancy().len() >= POOL_LIMIT {
            session.emitter.flush_occupancy(self.occupancy_order);
        }
    }

    /// INST. The usual one, an instruction of a running wave that is not trapped, calls nothing
    /// but the wave's `issue` (so saves no registers); the others go through
    /// [`Self::inst_in_full`]. Out of the walk: inlined there, it made the walk's other tokens
    /// cost more (docs/PERFORMANCE.md).
    #[inline(never)]
    fn inst(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let f = &G::ARCH.fields;
        let info = G::ARCH.insts[f.inst_id.get(w) as usize];
        let InstEffect::Wave(category) = info.effect else {
            return self.inst_in_full(session, w, t, info);
        };
        let cycles = self.cycles(info);
        // A trapped wave records nothing (trap entry and return are other effects).
        if let Some(builder) = self
            .waves
            .live(f.inst_wave.get(w))
            .filter(|b| !b.is_trapped())
        {
            builder.ran_until(t);
            builder.issue(category, cycles, t);
        }
    }

    /// An INST id's cycles at the header's DP rate.
    #[inline(always)]
    fn cycles(&self, info: InstInfo) -> u32 {
        u32::from(info.cycles)
            * match info.scale {
                CycleScale::One => 1,
                CycleScale::DpRate => self.target.dprate,
                CycleScale::DpRateDerate => self.target.dprate * self.target.derate,
            }
    }

    /// [`Self::inst`] of an INST id whose effect is other than an instruction of the wave.
    #[inline(never)]
    fn inst_in_full(&mut self, session: &mut Session<'_>, w: u64, t: i64, info: InstInfo) {
        let wave = G::ARCH.fields.inst_wave.get(w);
        let cycles = self.cycles(info);
        if let InstEffect::OtherSimd(category) = info.effect {
            let wgp = self.target.wgp as u8;
            session.emitter.add(move || InstOtherSimd {
                size: std::mem::size_of::<InstOtherSimd>() as u64,
                time: t,
                cycles: cycles as u16,
                wgp,
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
            InstEffect::Trap => return builder.enter_trap(t),
            InstEffect::ReturnFromTrap => return builder.return_from_trap(t),
            _ if builder.is_trapped() => return,
            _ => builder.ran_until(t),
        }
        match info.effect {
            InstEffect::Wave(category) => builder.issue(category, cycles, t),
            InstEffect::Jump => builder.jump(cycles, t),
            InstEffect::Immed => builder.wait_until(t),
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
        let value = if short {
            f.short_data.get(w)
        } else {
            f.data.get(w)
        };
        let flags = u8::from(short) | u8::from(privileged) << 1;
        let cu = (sa << 7 | wgp) as u8;
        session.shader_data(ShaderData::new(t, value, cu, simd as u8, wave as u8, flags));
    }
}

/// Merges a realtime sample that does not advance both clocks into the previous one.
#[cold]
#[inline(never)]
fn merge_realtime(session: &mut Session<'_>, shader_clock: i64, value: u64) {
    let Some(last) = session.emitter.last_pending_realtime() else {
        return;
    };
    last.realtime_clock = ((u128::from(last.realtime_clock) + u128::from(value)) / 2) as u64;
    last.shader_clock = ((i128::from(last.shader_clock) + i128::from(shader_clock)) / 2) as i64;
}

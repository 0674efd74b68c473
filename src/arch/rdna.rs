//! gfx10.3 / gfx11 / gfx12 (RDNA): the shared decode driver for the nibble stream.
//!
//! The token reader follows the reference's two loops (SQTT_FORMAT §1.3–1.4): a fast loop while
//! more than 64 bits remain past the read pointer, then a tail loop fed with zero nibbles. The
//! per-generation differences are data in [`RdnaArch`] (`gfx10.rs`, `gfx11.rs`, `gfx12.rs`).

use std::collections::VecDeque;

use super::table::{CycleScale, InstEffect, RdnaArch, TimestampFields, TokenKind, UnitFields};
use super::{gfx10, gfx11, gfx12};
use crate::decode::locations::LocationTable;
use crate::decode::registers::Registers;
use crate::decode::userdata::{UserdataEvent, USERDATA_2};
use crate::decode::{DecodeError, Session};
use crate::records::RecordKind;
use crate::records::{
    Dispatch, Event, EventKind, EventPayload, InstOtherSimd, Occupancy, OccupancyFlags, Pc,
    Realtime, ShaderData, WaveStateKind, EVENT_FLAG_BOP, EVENT_FLAG_PER_PIPE,
};
use crate::sink::{Delivery, Record, POOL_LIMIT};
use crate::stream::nibble::NibbleStream;
use crate::wave::{emit_wave, StitchRules, WaveBuilder, WaveIdentity};

pub fn decode(session: &mut Session<'_>, version: u8, data: &[u8]) -> Result<(), DecodeError> {
    let arch: &'static RdnaArch = match version {
        1 | 2 => &gfx10::ARCH,
        3 => &gfx11::ARCH,
        4 => &gfx12::ARCH,
        _ => return Err(DecodeError::UnsupportedVersion(version)),
    };
    let mut decoder = RdnaDecoder::new(arch, version);
    decoder.run(session, data);
    decoder.finish(session);
    Ok(())
}

/// WAVE_START counts in this range are context save/restore traffic, not new waves.
const CONTEXT_COUNTS: std::ops::Range<u64> = 66..90;
const CONTEXT_SAVE_MASK: u32 = 0b00_0011_0011;
const CONTEXT_RESTORE_MASK: u32 = 0b11_1100_1100;

/// Bound on the reorder queue: a stream whose clock never advances would otherwise queue every
/// token of the buffer (the reference does); past this the oldest token is released.
const MAX_PENDING: usize = 1 << 12;

/// Wave slots per SIMD that a 5-bit wave id can name.
const SLOTS: usize = 32;

/// A token handed from the reader to the parser.
#[derive(Clone, Copy, Debug)]
struct Token {
    kind: TokenKind,
    contents: u64,
    time: i64,
    byte_offset: u64,
}

/// The traced unit (HEADER DSA/DWGP/DSIMD) and its rates.
#[derive(Clone, Copy, Debug, Default)]
struct Target {
    sa: u64,
    wgp: u64,
    simd: u64,
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
    slots: [Option<usize>; SLOTS],
    pool: Vec<WaveBuilder>,
    free: Vec<usize>,
    /// Completed waves in WAVE_END order (ERRATA G1).
    completed: Vec<usize>,
}

impl TargetWaves {
    fn live(&mut self, wave: u64) -> Option<&mut WaveBuilder> {
        let index = (*self.slots.get(wave as usize)?)?;
        self.pool.get_mut(index).filter(|w| !w.complete)
    }

    fn held(&mut self, wave: u64) -> Option<&mut WaveBuilder> {
        let index = (*self.slots.get(wave as usize)?)?;
        self.pool.get_mut(index)
    }

    fn emit(&mut self, session: &mut Session<'_>, index: usize, rules: &StitchRules) {
        emit_wave(session, &mut self.pool[index], rules);
        for slot in self.slots.iter_mut().filter(|s| **s == Some(index)) {
            *slot = None;
        }
        self.free.push(index);
    }

    /// Emits the completed waves up to and including `index`, in completion order.
    fn emit_completed_through(
        &mut self,
        session: &mut Session<'_>,
        index: usize,
        rules: &StitchRules,
    ) {
        if let Some(pos) = self.completed.iter().position(|&w| w == index) {
            let done: Vec<usize> = self.completed.drain(..=pos).collect();
            for w in done {
                self.emit(session, w, rules);
            }
        }
    }

    /// A new wave in `slot`; whatever the slot still holds is emitted first.
    fn start(
        &mut self,
        session: &mut Session<'_>,
        slot: u64,
        rules: &StitchRules,
    ) -> Option<&mut WaveBuilder> {
        let slot = slot as usize;
        if let Some(old) = *self.slots.get(slot)? {
            if self.pool[old].complete {
                self.emit_completed_through(session, old, rules);
            } else {
                self.emit(session, old, rules);
            }
        }
        let index = self.free.pop().unwrap_or_else(|| {
            self.pool.push(WaveBuilder::default());
            self.pool.len() - 1
        });
        self.slots[slot] = Some(index);
        self.pool.get_mut(index)
    }

    fn complete(&mut self, wave: u64, t: i64) {
        if let Some(index) = self.slots.get(wave as usize).copied().flatten() {
            if !self.pool[index].complete {
                self.pool[index].rdna_complete(t);
                self.completed.push(index);
            }
        }
    }

    /// End of buffer: completed waves in completion order, then the unfinished ones by slot.
    fn finish(&mut self, session: &mut Session<'_>, rules: &StitchRules) {
        let done = std::mem::take(&mut self.completed);
        for &w in &done {
            self.emit(session, w, rules);
        }
        self.completed = done;
        self.completed.clear();
        for slot in 0..SLOTS {
            if let Some(index) = self.slots[slot] {
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

/// REG_INIT of type 2 (DISPATCH_INITIATOR) with the shader-enable bit: the dispatcher
/// `(me & 1, pipe)` that started a dispatch.
pub fn dispatch_initiator(w: u64) -> Option<(u8, u8)> {
    let kind = (w >> 18) & 3;
    let data = (w >> 20) as u32;
    (kind == 2 && data & 1 != 0).then_some((((w >> 16) & 1) as u8, ((w >> 14) & 3) as u8))
}

/// The EVENT record of an EVENT token whose id is reported (SQTT_FORMAT §2.5); time and byte
/// offset are left 0.
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

struct RdnaDecoder {
    arch: &'static RdnaArch,
    version: u8,
    /// The shader clock: the sum of every token's delta since the buffer start.
    clock: u64,
    target: Target,
    rules: StitchRules,
    registers: Registers,
    /// One group per SIMD.
    locations: LocationTable<Location, SLOTS>,
    waves: TargetWaves,
    /// HEADER bit 43 (version 4+): the trace streams through a double buffer, so occupancy is
    /// handed over in batches as it accumulates instead of once at the end of the buffer.
    double_buffer: bool,
    /// Packets were lost since the previous parsed token.
    packet_lost: bool,
    data_lost_reported: bool,
    /// gfx10/11 reorder queue (SQTT_FORMAT §1.3).
    pending: VecDeque<Token>,
}

impl RdnaDecoder {
    fn new(arch: &'static RdnaArch, version: u8) -> Self {
        RdnaDecoder {
            arch,
            version,
            clock: 0,
            target: Target {
                dprate: 1,
                derate: 1,
                ..Target::default()
            },
            rules: StitchRules {
                gfx12: arch.gfx12_stitch,
                exclude_barrier_wait: false,
                rdna_rescue: true,
                gfx9: false,
            },
            registers: Registers::default(),
            locations: LocationTable::new(1 << 12),
            waves: TargetWaves::default(),
            double_buffer: false,
            packet_lost: false,
            data_lost_reported: false,
            pending: VecDeque::new(),
        }
    }

    fn run(&mut self, session: &mut Session<'_>, data: &[u8]) {
        let arch = self.arch;
        let stream = NibbleStream::new(data);
        let total = stream.len();
        // Token start and the reference's read pointer (token start + 16 nibbles once read).
        let mut pos = 0usize;
        let mut read_ptr = 0usize;
        let mut prev_window = 0u64;
        let mut ext = false;
        let mut in_tail = false;
        let zero_is_nop = arch.tokens[0].kind == TokenKind::Nop;
        loop {
            let padded = read_ptr + 16 < total;
            if !padded {
                if !in_tail {
                    in_tail = true;
                    self.drain(session);
                }
                let done = if arch.stop_at_partial_window {
                    pos + 16 > total
                } else {
                    read_ptr >= total && prev_window == 0
                };
                if done {
                    break;
                }
            }
            let window = stream.window(pos);
            prev_window = window;
            read_ptr = pos + 16;
            if ext && window & 1 != 0 {
                // gfx12 WAVE_START_EXT extension byte.
                pos += 2;
                continue;
            }
            let slot = arch.tokens[(window & 0xFF) as usize];
            if slot.kind == TokenKind::Nop {
                // Padding comes in long runs of zero nibbles. Each zero followed by another zero
                // is a NOP (when the 0x00 slot is one), so all but the run's last nibble are
                // taken at once while the next iteration stays in the fast loop.
                let zeros = (window.trailing_zeros() / 4) as usize;
                let step = if zero_is_nop && zeros > 2 && pos + zeros + 30 < total {
                    zeros - 1
                } else {
                    1
                };
                read_ptr = pos + step + 15;
                pos += step;
                continue;
            }
            ext = arch.wave_start_ext_bytes && slot.kind == TokenKind::WaveStartExt;
            let length = usize::from(slot.bits / 4);
            match slot.kind {
                TokenKind::Unknown => {}
                TokenKind::Time => self.clock = self.clock.wrapping_add(slot.delta(window) + 4),
                TokenKind::Timestamp => self.timestamp(session, window, padded),
                kind => {
                    self.clock = self.clock.wrapping_add(slot.delta(window));
                    let mut contents = window;
                    let skip = arch.fields.new_pc_skip;
                    if kind == TokenKind::NewPc && skip > 0 && read_ptr + 16 < total {
                        contents = stream.window(pos + skip);
                        read_ptr += skip;
                    }
                    let token = Token {
                        kind,
                        contents,
                        time: self.clock as i64,
                        byte_offset: (pos / 2) as u64,
                    };
                    if arch.reorder_wave_ready {
                        self.enqueue(session, token);
                    } else {
                        self.handle(session, token);
                    }
                }
            }
            pos += length;
        }
        self.drain(session);
    }

    /// gfx10/11: WAVE_READY is stamped a cycle early and moved ahead of same-time tokens.
    fn enqueue(&mut self, session: &mut Session<'_>, mut token: Token) {
        if token.kind == TokenKind::WaveReady {
            token.time = token.time.wrapping_sub(1);
        }
        // The queue only ever holds tokens of one time (an earlier token is handled at once, a
        // later one releases the queue first), so one comparison with its back decides.
        match self.pending.back().map(|back| back.time) {
            Some(queued) if token.time < queued => self.handle(session, token),
            Some(queued) if token.time > queued => {
                self.drain(session);
                self.pending.push_back(token);
            }
            _ => {
                self.pending.push_back(token);
                if self.pending.len() > MAX_PENDING {
                    if let Some(oldest) = self.pending.pop_front() {
                        self.handle(session, oldest);
                    }
                }
            }
        }
    }

    fn drain(&mut self, session: &mut Session<'_>) {
        while let Some(token) = self.pending.pop_front() {
            self.handle(session, token);
        }
    }

    fn timestamp(&mut self, session: &mut Session<'_>, window: u64, fast_loop: bool) {
        let average = fast_loop != self.arch.average_realtime_in_tail;
        match self.arch.fields.timestamp {
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
        session.emitter.realtime(Realtime {
            shader_clock,
            realtime_clock: value,
            reserved: 0,
        });
    }

    fn packet_loss(&mut self, session: &mut Session<'_>) {
        self.packet_lost = true;
        session.marker_packet_loss();
        if !self.data_lost_reported {
            self.data_lost_reported = true;
            session.info_data_lost();
        }
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
        session.emitter.single(Record::Event(&event));
    }

    fn handle(&mut self, session: &mut Session<'_>, token: Token) {
        let w = token.contents;
        let t = token.time;
        match token.kind {
            TokenKind::Header => self.header(w),
            TokenKind::Reg => self.reg(session, w, t),
            TokenKind::RegInit => self.reg_init(session, token),
            TokenKind::Event | TokenKind::EventSync => self.rdna_event(session, w, t),
            TokenKind::Misc => self.misc(session, w, t),
            TokenKind::WaveStart | TokenKind::WaveStartExt => {
                self.wave_start(session, w, t, token.kind == TokenKind::WaveStartExt)
            }
            TokenKind::WaveEnd => self.wave_end(session, w, t),
            TokenKind::Inst => self.inst(session, w, t),
            TokenKind::ValuInst => {
                let wave = self.arch.fields.valu_wave.get(w);
                if let Some(wave) = self.waves.live(wave).filter(|w| !w.trapped) {
                    wave.rdna_instruction(crate::records::Category::Valu, 1, t);
                }
            }
            TokenKind::ImmOne => {
                let wave = self.arch.fields.imm_one_wave.get(w);
                if let Some(wave) = self.waves.live(wave).filter(|w| !w.trapped) {
                    wave.rdna_immediate(t);
                }
            }
            TokenKind::Immediate => self.for_each_masked(w, |wave| wave.rdna_immediate(t)),
            TokenKind::WaveReady => {
                self.for_each_masked(w, |wave| wave.update_state(WaveStateKind::Stall, t))
            }
            TokenKind::NewPc => {
                let f = &self.arch.fields;
                let pc = self.registers.translate(f.new_pc_address.get(w) << 2);
                if let Some(wave) = self.waves.held(f.new_pc_wave.get(w)) {
                    wave.set_next_pc(pc);
                }
            }
            TokenKind::ShaderData => self.shader_data(session, w, t, false),
            TokenKind::ShaderDataShort => self.shader_data(session, w, t, true),
            _ => {}
        }
        self.packet_lost = false;
    }

    /// IMMEDIATE / WAVE_READY: bits 8..24 are a mask of wave slots, applied in slot order.
    fn for_each_masked(&mut self, w: u64, mut f: impl FnMut(&mut WaveBuilder)) {
        let mask = (w >> 8) & 0xFFFF;
        for slot in 0..16 {
            if mask >> slot & 1 != 0 {
                if let Some(wave) = self.waves.live(slot).filter(|w| !w.trapped) {
                    f(wave);
                }
            }
        }
    }

    fn header(&mut self, w: u64) {
        let dprate = (w >> 28) & self.arch.dprate_mask;
        self.target = Target {
            simd: (w >> 13) & 3,
            wgp: (w >> 15) & 7,
            sa: (w >> 19) & 1,
            dprate: if dprate == 0 { 1 } else { 1 << (dprate - 1) },
            derate: 1 << ((w >> 33) & 7),
        };
        self.double_buffer = self.version >= 4 && (w >> 43) & 1 != 0;
        self.rules.exclude_barrier_wait = self
            .arch
            .header_exclude_barrier_wait
            .is_some_and(|f| f.get(w) != 0);
    }

    fn reg(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let RegWrite {
            me,
            pipe,
            compute,
            address,
            data,
        } = RegWrite::decode(w);
        if compute {
            self.registers.write_cs(me, pipe, address as u16, data);
        }
        if (!compute || self.arch.reg_all_userdata) && address == USERDATA_2 {
            match self.registers.write_userdata2(me, pipe, data) {
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
    }

    fn reg_init(&mut self, session: &mut Session<'_>, token: Token) {
        if let Some((me, pipe)) = dispatch_initiator(token.contents) {
            let dispatch = Dispatch {
                byte_offset: token.byte_offset,
                ..self.registers.dispatch(token.time, me, pipe, self.version)
            };
            session.emitter.single(Record::Dispatch(&dispatch));
        }
    }

    fn rdna_event(&self, session: &mut Session<'_>, w: u64, t: i64) {
        if let Some(event) = event_record(w) {
            session
                .emitter
                .single(Record::Event(&Event { time: t, ..event }));
        }
    }

    fn misc(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        if let Some(lost) = self.arch.fields.misc_packet_lost {
            if lost.get(w) != 0 {
                self.packet_loss(session);
            }
        } else if (w >> 16) & 1 != 0 {
            self.event(session, EventKind::SpmSample, t, 0, 0, 0, 0);
        }
        let flags = [
            (17, EventKind::GcRinse),
            (19, EventKind::SaveContext),
            (20, EventKind::TtStallBegin),
            (21, EventKind::TtStallEnd),
            (22, EventKind::DidtStallBegin),
            (23, EventKind::DidtStallEnd),
        ];
        for (bit, kind) in flags {
            if (w >> bit) & 1 != 0 {
                self.event(session, kind, t, 0, 0, 0, 0);
            }
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

    fn is_target(&self, sa: u64, wgp: u64, simd: u64) -> bool {
        sa == self.target.sa && wgp == self.target.wgp && simd == self.target.simd
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
        session.emitter.occupancy(Occupancy {
            pc,
            time: time as u64,
            reserved: 0,
            cu,
            simd: simd as u8,
            wave_id: wave as u8,
            bits: flags.pack(),
        });
    }

    fn wave_start(&mut self, session: &mut Session<'_>, w: u64, t: i64, is_ext: bool) {
        let f = &self.arch.fields;
        let (sa, wgp, simd, wave) = self.unit(&f.wave_start, w);
        let me = f.wave_start_me.get(w);
        let pipe = f.wave_start_pipe.get(w);
        let count = f.wave_start_count.get(w);
        let workgroup = match f.wave_start_workgroup {
            Some((extlds, wgid)) if is_ext && extlds.get(w) == 0 => wgid.get(w) as u8,
            _ => 0,
        };
        let cu = (sa << 7 | wgp) as u8;
        let target = self.is_target(sa, wgp, simd);
        let loc = location_index(sa, wgp, simd, wave);
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
        let pc = self
            .registers
            .wave_start_pc((me & 1) as u8, (pipe & 3) as u8);
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
        if let Some(location) = self.locations.get_mut(loc) {
            *location = Location { running: true, pc };
        }
        let flags = OccupancyFlags {
            start: true,
            me_id: me as u8,
            pipe_id: pipe as u8,
            is_ext,
            workgroup_id: workgroup,
            cluster_id: 0,
        };
        Self::occupancy(session, pc, t, cu, simd, wave, flags);
        session.marker_wave_start(cu, simd as u8, wave as u8, pc);
        if target {
            let id = WaveIdentity {
                cu,
                simd: simd as u8,
                wave_id: wave as u8,
                dispatcher: (me << 4 | pipe) as u8,
                workgroup_id: workgroup,
                cluster_id: 0,
            };
            let rules = self.rules;
            if let Some(builder) = self.waves.start(session, wave, &rules) {
                builder.restart(id, t, pc);
            }
        }
    }

    /// WAVE_START counts 66–89: a context save or restore of the wave at this location.
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
                    w.trapped = true;
                    w.contexts = w.contexts.saturating_add(1);
                    w.rdna_trap(t);
                }
            }
            let flags = OccupancyFlags::default();
            Self::occupancy(session, location.pc, t, cu, simd, wave, flags);
        } else if CONTEXT_RESTORE_MASK >> index & 1 != 0 {
            if target {
                if self.waves.live(wave).is_none() {
                    let rules = self.rules;
                    if let Some(w) = self.waves.start(session, wave, &rules) {
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
                }
            }
            let flags = OccupancyFlags {
                start: true,
                ..OccupancyFlags::default()
            };
            Self::occupancy(session, location.pc, t, cu, simd, wave, flags);
        }
    }

    fn wave_end(&mut self, session: &mut Session<'_>, w: u64, t: i64) {
        let (sa, wgp, simd, wave) = self.unit(&self.arch.fields.wave_end, w);
        let cu = (sa << 7 | wgp) as u8;
        if self.is_target(sa, wgp, simd) {
            self.waves.complete(wave, t);
        }
        let loc = location_index(sa, wgp, simd, wave);
        let location = self.locations.get(loc);
        if !location.running {
            let start = Occupancy {
                pc: Pc::NONE,
                time: 0,
                reserved: 0,
                cu,
                simd: simd as u8,
                wave_id: wave as u8,
                bits: OccupancyFlags {
                    start: true,
                    ..OccupancyFlags::default()
                }
                .pack(),
            };
            match session.emitter.filter().mode(RecordKind::Occupancy) {
                Delivery::Pooled => session.emitter.pending_occupancy().insert(0, start),
                _ => session.emitter.occupancy(start),
            }
        }
        if let Some(location) = self.locations.get_mut(loc) {
            location.running = false;
        }
        session.marker_wave_end(cu, simd as u8, wave as u8, location.pc);
        Self::occupancy(
            session,
            location.pc,
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
        let f = &self.arch.fields;
        let wave = f.inst_wave.get(w);
        let info = self.arch.insts[f.inst_id.get(w) as usize];
        let cycles = u32::from(info.cycles)
            * match info.scale {
                CycleScale::One => 1,
                CycleScale::DpRate => self.target.dprate,
                CycleScale::DpRateDerate => self.target.dprate * self.target.derate,
            };
        if let InstEffect::OtherSimd(category) = info.effect {
            session.emitter.other_simd(InstOtherSimd {
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
        if builder.trapped {
            if info.effect == InstEffect::ReturnFromTrap {
                builder.rdna_return_from_trap(t);
            }
            return;
        }
        match info.effect {
            InstEffect::Wave(category) => builder.rdna_instruction(category, cycles, t),
            InstEffect::Jump => {
                builder.rdna_instruction(crate::records::Category::Salu, cycles, t);
                builder.open_pc_slot();
            }
            InstEffect::Immed => builder.rdna_immediate(t),
            InstEffect::Trap => builder.rdna_trap(t),
            InstEffect::ReturnFromTrap => builder.rdna_return_from_trap(t),
            InstEffect::Ignore | InstEffect::OtherSimd(_) => {}
        }
    }

    fn shader_data(&self, session: &mut Session<'_>, w: u64, t: i64, short: bool) {
        let f = &self.arch.fields.shader_data;
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
        self.waves.finish(session, &rules);
        session.emitter.flush_buffer_end();
        let registers = &self.registers;
        session.finish_markers(|address| registers.translate_from_start(address));
    }
}

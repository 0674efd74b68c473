//! WAVE_START and WAVE_END: the occupancy records of every wave slot of the SE, and the start
//! and end of the traced waves (those of the header's target CU).

use super::tokens;
use super::{check_slot, late_resolve, Parser};
use crate::error::ErrorKind;
use crate::records::{Occupancy, OccupancyFlags, Pc};
use crate::sink::POOL_LIMIT;
use crate::wave::Session;

/// WAVE_START `count` above this is context save/restore traffic, not a new wave.
const CONTEXT_SWITCH_COUNT: u64 = 64;
/// Occupancy locations: `cu << 7 | simd << 5 | slot` with a 4-bit CU.
pub(super) const LOCATIONS: usize = 16 << 7;

impl Parser {
    pub(super) fn wave_start(
        &mut self,
        session: &mut Session<'_>,
        v: u64,
        t: i64,
    ) -> Result<(), ErrorKind> {
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
            let record = Occupancy::new(pc, t, cu as u8, simd as u8, slot as u8, flags);
            session.emitter.add(move || record);
        }
        if let Some(running) = self.running.get_mut(location) {
            *running = Some(pc);
        }
        session.marker_wave_start(cu as u8, simd as u8, slot as u8, pc);
        Ok(())
    }

    pub(super) fn wave_end(
        &mut self,
        session: &mut Session<'_>,
        v: u64,
        t: i64,
    ) -> Result<(), ErrorKind> {
        use tokens::wave as f;
        let slot = check_slot(f::SLOT.get(v))?;
        let (cu, simd) = (f::CU.get(v) as usize, f::SIMD.get(v) as usize);
        if self.is_target(cu, v) {
            let entry = &mut self.waves[simd][slot];
            if entry.as_ref().is_some_and(|w| w.restored()) {
                if let Some(mut w) = entry.take() {
                    self.live_waves -= 1;
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
                let record = Occupancy::new(pc, t, cu as u8, simd as u8, slot as u8, flags);
                session.emitter.add(move || record);
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
                emitter.add(move || Occupancy::new(Pc::NONE, 0, cu, simd, slot, flags));
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

    /// gfx9 occupancy goes out in token order (not sorted, as RDNA's): its tokens are in time
    /// order, and the reference leaves the end of a wave whose start was never seen (time 0)
    /// where it was decoded.
    pub(super) fn flush_occupancy(&mut self, session: &mut Session<'_>) {
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
}

fn location(cu: usize, simd: usize, slot: usize) -> usize {
    (cu << 7 | simd << 5 | slot) & (LOCATIONS - 1)
}

//! Wave slots: every location of the shader engine (running or not, and its start PC), and the
//! traced SIMD's waves with the order in which they go out.

use super::wave::RdnaWave;
use crate::arch::table::UnitFields;
use crate::spare::keep_largest;
use crate::wave::{emit_wave, Session, StitchRules};

/// Wave slots per SIMD that a 5-bit wave id can name.
pub(super) const SLOTS: usize = 32;

/// The index of a wave location in the location table: its unit (sa, then simd, then wgp, from
/// the low bit up, the order in which every RDNA token lays them out) above its 5-bit slot.
pub(super) fn location_index(sa: u64, wgp: u64, simd: u64, wave: u64) -> usize {
    (((wgp & 0xF) << 3 | (simd & 3) << 1 | (sa & 1)) << 5 | (wave & 0x1F)) as usize
}

/// The location a token names in `fields`: [`location_index`] of its fields, read as the two
/// bit ranges they are in the token ([`UnitFields::unit_mask`]).
#[inline(always)]
pub(super) fn location_of(fields: &UnitFields, w: u64) -> usize {
    ((w >> fields.sa.lo & fields.unit_mask()) << 5 | fields.wave.get(w)) as usize
}

/// A location's CU (sa above wgp, as records hold it), SIMD and slot.
#[inline(always)]
pub(super) fn location_parts(loc: usize) -> (u8, u8, u8) {
    let cu = (loc >> 5 & 1) << 7 | loc >> 8;
    (cu as u8, (loc >> 6 & 3) as u8, (loc & 0x1F) as u8)
}

/// Waves of the traced SIMD, by slot, and the order in which completed ones are emitted.
#[derive(Default)]
pub(super) struct TargetWaves {
    /// Pool index of the wave in each slot.
    slots: [Option<u8>; SLOTS],
    /// A bit per slot that holds a wave, so that emitting a wave and the end of a buffer visit
    /// only those slots.
    occupied: u32,
    pool: Vec<RdnaWave>,
    free: Vec<usize>,
    /// Unfinished waves whose slot a new wave took, with their slot: the reference keeps them
    /// until the end of the buffer, where they go out with the slot's last wave.
    abandoned: Vec<(usize, usize)>,
}

/// At most this many instructions' worth of wave buffers stay with the thread between buffers.
const KEPT_INSTS: usize = 1 << 18;

/// The records and timeline entries a new wave builder has room for (64 KB and 4 KB): most
/// traced waves of real captures fit.
const FIRST_RECORDS: usize = 2048;
const FIRST_STATES: usize = 512;

impl TargetWaves {
    /// No wave in any slot; the roomiest builders are kept (with their buffers) for new waves.
    pub(super) fn reset(&mut self) {
        keep_largest(&mut self.pool, KEPT_INSTS, RdnaWave::record_capacity);
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

    /// The running wave in slot `wave`. A wave leaves its slot when it ends (it is emitted at
    /// its WAVE_END, [`Self::complete`]), so a wave found in a slot is running.
    pub(super) fn live(&mut self, wave: u64) -> Option<&mut RdnaWave> {
        let index = self.index(wave)?;
        let found = self.pool.get_mut(index);
        debug_assert!(found.as_ref().is_none_or(|w| !w.has_ended()));
        found
    }

    /// Applies `f` to the running wave of each slot in `mask`, in slot order. Only the slots
    /// that hold a wave are visited: a WAVE_READY names most of the SIMD's slots.
    pub(super) fn for_each_live_in(&mut self, mask: u32, mut f: impl FnMut(&mut RdnaWave)) {
        let mut held = mask & self.occupied;
        while held != 0 {
            let slot = held.trailing_zeros();
            held &= held - 1;
            if let Some(wave) = self.live(u64::from(slot)) {
                f(wave);
            }
        }
    }

    /// Emits the wave at pool `index` and frees its builder; the caller has taken it out of
    /// its slot.
    fn emit(&mut self, session: &mut Session<'_>, index: usize, rules: &StitchRules) {
        let wave = &mut self.pool[index];
        wave.settle();
        emit_wave(session, &mut wave.wave, rules);
        self.free.push(index);
    }

    /// The wave in `slot` leaves it; returns its pool index.
    fn vacate(&mut self, slot: u64) -> Option<usize> {
        let index = self.index(slot)?;
        self.slots[slot as usize] = None;
        self.occupied &= !(1 << slot);
        Some(index)
    }

    /// A new wave in `slot`. A wave the slot still holds has not ended (an ended wave was emitted
    /// at its WAVE_END): it is kept until the end of the buffer.
    pub(super) fn start(&mut self, slot: u64) -> Option<&mut RdnaWave> {
        let bit = 1u32.checked_shl(slot as u32)?;
        let held = *self.slots.get(slot as usize)?;
        let index = match self.free.pop() {
            Some(index) => index,
            None => Self::new_builder(&mut self.pool),
        };
        let Ok(small) = u8::try_from(index) else {
            // More builders than a slot can name: the slot keeps its wave.
            self.free.push(index);
            return None;
        };
        if let Some(old) = held {
            self.abandoned.push((slot as usize, usize::from(old)));
        }
        self.slots[slot as usize] = Some(small);
        self.occupied |= bit;
        self.pool.get_mut(index)
    }

    /// A builder for one more wave in flight, with room for a typical traced wave: it stays
    /// with the thread, and growing from nothing would copy its buffers about ten times.
    #[cold]
    #[inline(never)]
    fn new_builder(pool: &mut Vec<RdnaWave>) -> usize {
        let mut builder = RdnaWave::default();
        builder.wave.insts.reserve_exact(FIRST_RECORDS);
        builder.wave.timeline.reserve_exact(FIRST_STATES);
        pool.push(builder);
        pool.len() - 1
    }

    /// Completes the wave in `wave`'s slot and emits it at once, so that completed waves go out
    /// in WAVE_END order (ERRATA G1), between the pooled batches handed over while the buffer is
    /// read (rdna.md §4.4); false when the slot holds no running wave (none started in this
    /// buffer, or the last one has ended).
    pub(super) fn complete(
        &mut self,
        session: &mut Session<'_>,
        wave: u64,
        t: i64,
        rules: &StitchRules,
    ) -> bool {
        match self.vacate(wave) {
            Some(index) => {
                self.pool[index].end(t);
                self.emit(session, index, rules);
                true
            }
            None => false,
        }
    }

    /// End of buffer, after the pooled batches: the waves the stream cut short, by slot, each
    /// slot's abandoned ones first.
    pub(super) fn finish_unfinished(&mut self, session: &mut Session<'_>, rules: &StitchRules) {
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
            if let Some(index) = self.vacate(slot as u64) {
                self.emit(session, index, rules);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::rdna::{gfx10, gfx11, gfx12};
    use crate::testing::Rng;

    #[test]
    fn a_location_read_from_the_token_is_that_of_its_fields() {
        let units = [
            gfx10::ARCH.fields.wave_start,
            gfx10::ARCH.fields.wave_end,
            gfx11::ARCH.fields.wave_start,
            gfx11::ARCH.fields.wave_end,
            gfx12::ARCH.fields.wave_start,
            gfx12::ARCH.fields.wave_end,
            gfx12::ARCH.fields.shader_data.unit,
        ];
        let mut rng = Rng(0x51A7_E5E1_0CA7_1011);
        for fields in units {
            for _ in 0..1000 {
                let w = rng.next_u64();
                let (sa, wgp, simd, wave) = (
                    fields.sa.get(w),
                    fields.wgp.get(w),
                    fields.simd.get(w),
                    fields.wave.get(w),
                );
                let loc = location_of(&fields, w);
                assert_eq!(loc, location_index(sa, wgp, simd, wave), "{w:#x}");
                let parts = ((sa << 7 | wgp) as u8, simd as u8, wave as u8);
                assert_eq!(location_parts(loc), parts, "{w:#x}");
            }
        }
    }

    #[test]
    fn a_slot_restarted_past_what_a_slot_can_name_keeps_its_wave() {
        // A stream that starts waves in a slot and never ends them (lost WAVE_ENDs): every
        // builder but the slot's is abandoned until the end of the buffer. Past 256 builders a
        // start is ignored, and no more builders are made.
        let mut waves = TargetWaves::default();
        for _ in 0..300 {
            waves.start(3);
        }
        assert_eq!(waves.pool.len(), 257);
        assert_eq!(waves.abandoned.len(), 255);
        assert_eq!(waves.index(3), Some(255));
        assert!(waves
            .abandoned
            .iter()
            .all(|&(slot, index)| slot == 3 && index < 255));
    }
}

//! Wave assembly and PC reconstruction, shared by every architecture.
//!
//! A [`WaveBuilder`] collects one wave's instructions and state timeline while its tokens are
//! decoded, as each architecture's timing rules say (`arch/gfx9/wave.rs`, `arch/rdna/wave.rs`);
//! [`emit_wave`] stitches PCs onto it and hands the WAVE record to the emitter.

pub mod markers;
mod session;
pub mod stitch;

pub use session::Session;

pub use stitch::{SharedStitch, StitchRules, WaveSpan};

use crate::records::{Category, InfoCode, Inst, Pc, Wave, WaveState, WaveStateKind};
use crate::sink::Record;

/// Writes `value` after `v`'s entries and keeps it if `keep`, without a branch on `keep` and
/// without a growth check: the wave timings' hot paths check their buffers' room once.
///
/// # Safety
///
/// `v` has room for one more entry: `v.len() < v.capacity()`.
#[inline(always)]
pub unsafe fn append_if<T: Copy>(v: &mut Vec<T>, value: T, keep: bool) {
    let len = v.len();
    debug_assert!(len < v.capacity());
    // SAFETY: the slot after the entries is allocated (the caller's room); once written it is
    // initialised, so the length may cover it.
    unsafe {
        v.as_mut_ptr().add(len).write(value);
        v.set_len(len + usize::from(keep));
    }
}

/// A point where the trace pins the PC of the instruction at `index` (wave start, NEW_PC after
/// a jump, return from trap). `pc` stays `None` while the token announcing it has not arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcSlot {
    pub index: usize,
    pub pc: Option<Pc>,
}

/// Identity of a wave as reported in its WAVE record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveIdentity {
    pub cu: u8,
    pub simd: u8,
    pub wave_id: u8,
    /// `(me << 4) | pipe`.
    pub dispatcher: u8,
    pub workgroup_id: u8,
    pub cluster_id: u8,
}

/// One wave being decoded. Buffers are reused across waves (see [`WaveBuilder::restart`]).
#[derive(Debug)]
pub struct WaveBuilder {
    pub id: WaveIdentity,
    pub contexts: u8,
    pub begin_time: i64,
    pub end_time: i64,
    pub insts: Vec<Inst>,
    pub timeline: Vec<WaveState>,
    pub slots: Vec<PcSlot>,
    pub state: WaveStateKind,
    pub last_state_cycle: i64,
    /// WAVE_END was seen.
    pub complete: bool,
    /// Inside a trap handler: instruction tokens are not recorded.
    pub trapped: bool,
    /// gfx9: a record may still be an issued instruction that was never classified (set by
    /// the gfx9 wave before it is emitted).
    pub unfinished: bool,
    /// gfx9: a record was taken back. The reference's record array stays allocated, so the
    /// WAVE record's instruction array is non-null even when it ends up empty.
    pub took_back_record: bool,
}

impl Default for WaveBuilder {
    fn default() -> Self {
        WaveBuilder {
            id: WaveIdentity::default(),
            contexts: 0,
            begin_time: 0,
            end_time: 0,
            insts: Vec::new(),
            timeline: Vec::new(),
            slots: Vec::new(),
            state: WaveStateKind::Idle,
            last_state_cycle: 0,
            complete: false,
            trapped: false,
            unfinished: false,
            took_back_record: false,
        }
    }
}

impl WaveBuilder {
    /// Starts a new wave at `time` whose first instruction is at `start_pc`, keeping buffers. An
    /// unknown start (`Pc::NONE`: no program address seen, a wave created by a context restore or
    /// a lost start) pins nothing: the first PC comes from the trace (NEW_PC, INST_PC), if at all.
    pub fn restart(&mut self, id: WaveIdentity, time: i64, start_pc: Pc) {
        self.id = id;
        self.contexts = 0;
        self.begin_time = time;
        self.end_time = time;
        self.insts.clear();
        self.timeline.clear();
        self.slots.clear();
        if start_pc != Pc::NONE {
            self.slots.push(PcSlot {
                index: 0,
                pc: Some(start_pc),
            });
        }
        self.state = WaveStateKind::Idle;
        self.last_state_cycle = time;
        self.complete = false;
        self.trapped = false;
        self.unfinished = false;
        self.took_back_record = false;
    }

    /// The next instruction's PC will be announced by the trace (NEW_PC, INST_PC).
    pub fn open_pc_slot(&mut self) {
        self.slots.push(PcSlot {
            index: self.insts.len(),
            pc: None,
        });
    }

    /// Inserts the token-less `s_barrier_wait` records found by the stitcher (ERRATA G2), in
    /// walk order; of several for one record index only the first counts, and none before the
    /// first record. Each starts where the record before it ends and lasts until the record
    /// after it starts; when that one starts at the same time and lasts more than a cycle, it
    /// gives its first cycle to the barrier (time + 1, duration − 1, stall kept). The timeline
    /// entry the barrier starts in is split around a WAIT span of its length, unless that entry
    /// ends before the next record starts; a zero-length remainder is kept.
    fn insert_excluded_barriers(&mut self, excluded: &[(usize, Pc)]) {
        if excluded.is_empty() || self.insts.is_empty() {
            return;
        }
        let mut insts = Vec::with_capacity(self.insts.len() + excluded.len());
        let mut timeline = Vec::with_capacity(self.timeline.len() + 2 * excluded.len());
        let mut done = 0usize;
        let mut entry = 0usize;
        let mut entry_end = self.begin_time;
        for &(index, pc) in excluded {
            if index <= done || index >= self.insts.len() {
                continue;
            }
            insts.extend_from_slice(&self.insts[done..index]);
            let previous = self.insts[index - 1];
            let start = previous.time.wrapping_add(i64::from(previous.duration));
            let next = &mut self.insts[index];
            if next.time == start && next.duration > 1 {
                next.time += 1;
                next.duration -= 1;
            }
            let next_time = next.time;
            let length = next_time.wrapping_sub(start);
            // The entries up to the one that ends after the barrier's start.
            while entry_end <= start {
                let Some(&state) = self.timeline.get(entry) else {
                    break;
                };
                entry_end = entry_end.wrapping_add(i64::from(state.duration));
                timeline.push(state);
                entry += 1;
            }
            let into = entry_end.wrapping_sub(start);
            if let Some(last) = timeline.last_mut() {
                if i64::from(last.duration) >= into && entry_end >= next_time {
                    last.duration = clamp_i32(i64::from(last.duration) - into);
                    let kind = last.kind;
                    timeline.push(WaveState {
                        kind: WaveStateKind::Wait as i32,
                        duration: clamp_i32(length),
                    });
                    timeline.push(WaveState {
                        kind,
                        duration: clamp_i32(into.wrapping_sub(length)),
                    });
                }
            }
            insts.push(Inst::new(
                Category::Immed as u8,
                0,
                clamp_i32(length),
                start,
                pc,
            ));
            done = index;
        }
        insts.extend_from_slice(&self.insts[done..]);
        timeline.extend_from_slice(self.timeline.get(entry..).unwrap_or(&[]));
        self.insts = insts;
        self.timeline = timeline;
    }

    fn record(&self) -> Wave {
        Wave {
            cu: self.id.cu,
            simd: self.id.simd,
            wave_id: self.id.wave_id,
            contexts: self.contexts,
            dispatcher: self.id.dispatcher,
            workgroup_id: self.id.workgroup_id,
            cluster_id: self.id.cluster_id,
            reserved: 0,
            size: std::mem::size_of::<Wave>() as u64,
            begin_time: self.begin_time,
            end_time: self.end_time,
            timeline_size: self.timeline.len() as u64,
            instructions_size: self.insts.len() as u64,
            timeline_array: if self.timeline.is_empty() {
                std::ptr::null()
            } else {
                self.timeline.as_ptr()
            },
            instructions_array: if self.insts.is_empty() && !self.took_back_record {
                std::ptr::null()
            } else {
                self.insts.as_ptr()
            },
        }
    }
}

fn clamp_i32(value: i64) -> i32 {
    value.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// Stitches PCs onto a finished (or abandoned) wave, applies the post-processing and info rules
/// of SQTT_FORMAT §3.6, and delivers its WAVE record.
pub fn emit_wave(session: &mut Session<'_>, wave: &mut WaveBuilder, rules: &StitchRules) {
    if !wave.insts.is_empty() {
        let span = WaveSpan {
            begin: wave.begin_time,
            end: wave.end_time,
        };
        let (stitch, isa) = session.stitch_and_isa();
        let mut excluded = std::mem::take(&mut stitch.excluded);
        excluded.clear();
        let (insts, slots) = (&mut wave.insts, &wave.slots);
        let stitched = match isa.as_callback() {
            Some(callback) => stitch.stitch(callback, insts, slots, rules, span, &mut excluded),
            None => stitch.stitch(isa, insts, slots, rules, span, &mut excluded),
        };
        // Counted only when it can matter: no more records than the wave has are stitched.
        let missed = || {
            let expected = wave
                .insts
                .iter()
                .filter(|i| i.category() != Category::Context as u8)
                .count();
            stitched < expected
        };
        let has_code_object = wave
            .slots
            .first()
            .and_then(|s| s.pc)
            .is_some_and(|pc| pc.code_object_id != 0);
        // An incomplete wave reports that instead (below).
        if stitched < wave.insts.len()
            && has_code_object
            && (wave.complete || wave.trapped)
            && missed()
        {
            session.info_once(InfoCode::StitchIncomplete);
        }
        wave.insert_excluded_barriers(&excluded);
        session.stitch_and_isa().0.excluded = excluded;
        if wave.unfinished {
            // An instruction issued but never classified (the gfx9 timing model's placeholder,
            // a category outside the ABI) goes out as the reference gives it: category NONE,
            // PC 0 (stitching stopped there).
            for inst in wave.insts.iter_mut() {
                if inst.category() > Category::Bvh as u8 {
                    inst.set_category(Category::None as u8);
                }
            }
        }
    }
    if !wave.complete && !wave.trapped {
        session.info_once(InfoCode::WaveIncomplete);
    }
    if !wave.complete {
        // The reference's end time of a wave that never ended starts at 0 and is raised to cover
        // its instructions; set after stitching, which sees the wave's own end.
        let last = wave
            .insts
            .iter()
            .map(|i| i.time.wrapping_add(i64::from(i.duration)).wrapping_add(4))
            .max();
        wave.end_time = last.unwrap_or(0).max(0);
    }
    let record = wave.record();
    session.emitter.single(Record::Wave(&record));
}

#[cfg(test)]
mod tests {
    use super::*;

    use WaveStateKind::{Exec, Idle, Stall, Wait};

    /// A wave that started at 100 with these records `(category, stall, duration, time)` and
    /// timeline `(state, duration)`.
    fn wave(
        records: &[(Category, u32, i32, i64)],
        timeline: &[(WaveStateKind, i32)],
    ) -> WaveBuilder {
        let mut w = WaveBuilder::default();
        w.restart(WaveIdentity::default(), 100, Pc::new(0x1000, 0));
        w.insts
            .extend(records.iter().map(|&(category, stall, duration, time)| {
                Inst::new(category as u8, stall, duration, time, Pc::NONE)
            }));
        w.timeline
            .extend(timeline.iter().map(|&(state, duration)| WaveState {
                kind: state as i32,
                duration,
            }));
        w
    }

    fn timeline(w: &WaveBuilder) -> Vec<(i32, i32)> {
        w.timeline.iter().map(|s| (s.kind, s.duration)).collect()
    }

    fn records(w: &WaveBuilder) -> Vec<(u8, u32, i32, i64, u64)> {
        w.insts
            .iter()
            .map(|i| (i.category(), i.stall(), i.duration, i.time, i.pc.address))
            .collect()
    }

    #[test]
    fn an_excluded_barrier_takes_the_first_cycle_of_a_record_starting_with_it() {
        // An immediate waits from the MESSAGE's end (111) until 113; the wave ends at 120.
        let mut w = wave(
            &[
                (Category::Message, 0, 1, 110),
                (Category::Immed, 2, 3, 111),
                (Category::Message, 0, 6, 114),
            ],
            &[(Idle, 10), (Exec, 1), (Wait, 3), (Exec, 6)],
        );
        // Two token-less lines for record 1: the first counts.
        w.insert_excluded_barriers(&[(1, Pc::new(0x1004, 0)), (1, Pc::new(0x1008, 0))]);
        assert_eq!(
            records(&w),
            [
                (11, 0, 1, 110, 0),
                (9, 0, 1, 111, 0x1004),
                (9, 2, 2, 112, 0),
                (11, 0, 6, 114, 0)
            ]
        );
        // The WAIT entry it starts in (111..114) is split: none before, 1, the rest.
        assert_eq!(
            timeline(&w),
            [(1, 10), (2, 1), (3, 0), (3, 1), (3, 2), (2, 6)]
        );
        // A record of one cycle keeps it: the barrier lasts 0.
        let mut w = wave(
            &[(Category::Message, 0, 1, 110), (Category::Salu, 0, 1, 111)],
            &[(Idle, 10), (Exec, 2)],
        );
        w.insert_excluded_barriers(&[(1, Pc::new(0x1004, 0))]);
        assert_eq!(
            records(&w)[1..3],
            [(9, 0, 0, 111, 0x1004), (2, 0, 1, 111, 0)]
        );
        // None before the first record.
        let mut w = wave(&[(Category::Salu, 0, 1, 111)], &[(Idle, 11)]);
        w.insert_excluded_barriers(&[(0, Pc::new(0x1004, 0))]);
        assert_eq!(w.insts.len(), 1);
    }

    #[test]
    fn an_excluded_barrier_leaves_the_timeline_when_its_entry_ends_before_the_next_record() {
        // The VALU took in the stall since 115.
        let mut w = wave(
            &[(Category::Message, 0, 1, 110), (Category::Valu, 5, 6, 115)],
            &[(Idle, 10), (Exec, 3), (Wait, 2), (Stall, 5), (Exec, 1)],
        );
        let before = timeline(&w);
        w.insert_excluded_barriers(&[(1, Pc::new(0x1004, 0))]);
        assert_eq!(records(&w)[1], (9, 0, 4, 111, 0x1004));
        // The EXEC entry the barrier starts in ends at 113, before the VALU's 115.
        assert_eq!(timeline(&w), before);
    }

    #[test]
    fn excluded_barrier_splits_the_enclosing_timeline_entry() {
        let mut w = wave(
            &[(Category::Message, 0, 1, 110), (Category::Valu, 0, 1, 139)],
            &[(Idle, 10), (Exec, 30)],
        );
        w.insert_excluded_barriers(&[(1, Pc::new(0x1004, 0))]);
        let got: Vec<_> = w
            .insts
            .iter()
            .map(|i| (i.category(), i.duration, i.time))
            .collect();
        assert_eq!(got, [(11, 1, 110), (9, 28, 111), (6, 1, 139)]);
        assert_eq!(timeline(&w), [(1, 10), (2, 1), (3, 28), (2, 1)]);
    }
}

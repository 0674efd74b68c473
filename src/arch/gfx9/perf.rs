//! PERF tokens: the performance-counter samples of a buffer, with an empty sample marking each
//! gap of more than one counter interval.

use super::tokens;
use super::Parser;
use crate::records::PerfEvent;
use crate::sink::POOL_LIMIT;
use crate::wave::Session;

pub(super) const PERF_CUS: usize = 16;
pub(super) const PERF_BANKS: usize = 4;

impl Parser {
    pub(super) fn perf(&mut self, session: &mut Session<'_>, v: u64, t: i64) {
        use tokens::perf as f;
        if f::SH.get(v) != 0 {
            return;
        }
        let cu = f::CU.get(v) as usize;
        let bank = f::BANK.get(v) as usize;
        let counters = f::COUNTERS.map(|c| c.get(v) as u16);
        let sample = PerfEvent::new(t - 4 * cu as i64, cu as u8, bank as u8, counters);
        if self.counter_interval != 0 {
            let last = &mut self.perf_last_time[cu][bank];
            if *last > 0 && sample.time > *last + self.counter_interval as i64 {
                // A gap of more than one interval: an empty sample marks it.
                self.perf
                    .push(PerfEvent::new(sample.time, cu as u8, bank as u8, [0; 4]));
            }
            *last = sample.time;
            self.perf_times_written = true;
        }
        self.perf.push(sample);
        if self.header.double_buffer && self.perf.len() >= POOL_LIMIT {
            self.hand_over_perf(session);
        }
    }

    /// Perf samples go out after the buffer's other pooled records, or as a full batch.
    pub(super) fn hand_over_perf(&mut self, session: &mut Session<'_>) {
        for sample in self.perf.drain(..) {
            session.emitter.add(move || sample);
        }
        session.emitter.flush::<PerfEvent>();
    }

    /// End of the buffer: every bank sampled under a known interval gets an empty sample one
    /// interval after its last.
    pub(super) fn close_perf_intervals(&mut self) {
        if self.counter_interval != 0 {
            for (cu, banks) in self.perf_last_time.iter().enumerate() {
                for (bank, &last) in banks.iter().enumerate().filter(|(_, &l)| l > 0) {
                    let time = last + self.counter_interval as i64;
                    self.perf
                        .push(PerfEvent::new(time, cu as u8, bank as u8, [0; 4]));
                }
            }
        }
    }
}

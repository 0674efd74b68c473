//! The chunk contract of `quick_scan` (API.md §4.13, §8.1): a trace may arrive in chunks; chunk
//! N starts from the register state chunk N−1 ended with, published on the same handle.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::{header_word, ScanArch};
use crate::arch::registers::Registers;
use crate::error::{DecodeError, ErrorKind};
use crate::sink::{Emitter, Filter, RecordSink};

/// Published chunk states live in a ring indexed by `chunk_index % RING_SLOTS`.
pub const RING_SLOTS: usize = 1024;

/// How long chunk N waits for chunk N−1's state: 2500 waits of 40 µs, about 0.1 s.
const WAIT_STEP: Duration = Duration::from_micros(40);
const WAIT_STEPS: u32 = 2500;

#[derive(Default)]
struct Shared {
    /// The family of the trace, once a chunk header told it (`None`: unknown or unsupported).
    arch: Option<ScanArch>,
    /// The header word of chunk 0 when it was recognised (0 otherwise).
    header: u64,
    /// `(chunk index, entry state)` per ring slot.
    ring: Vec<Option<(u64, Registers)>>,
}

/// The scan state of one handle.
#[derive(Default)]
pub struct ScanChunks {
    shared: Mutex<Shared>,
    published: Condvar,
}

impl ScanChunks {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, chunk_index: u64, registers: Registers) {
        {
            let mut shared = self.lock();
            if shared.ring.is_empty() {
                shared.ring.resize_with(RING_SLOTS, || None);
            }
            let slot = (chunk_index % RING_SLOTS as u64) as usize;
            shared.ring[slot] = Some((chunk_index, registers));
        }
        self.published.notify_all();
    }

    fn entry_state(shared: &Shared, chunk_index: u64) -> Option<Registers> {
        let slot = (chunk_index % RING_SLOTS as u64) as usize;
        match shared.ring.get(slot) {
            Some(Some((index, registers))) if *index == chunk_index => Some(registers.clone()),
            _ => None,
        }
    }

    /// The entry state of `chunk_index`, waiting about 0.1 s for it to be published.
    fn wait_for(&self, chunk_index: u64) -> Option<Registers> {
        let mut shared = self.lock();
        for _ in 0..WAIT_STEPS {
            if let Some(registers) = Self::entry_state(&shared, chunk_index) {
                return Some(registers);
            }
            shared = self
                .published
                .wait_timeout(shared, WAIT_STEP)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Self::entry_state(&shared, chunk_index)
    }

    /// The family, the header word for a standalone output and the entry state of a chunk,
    /// for `build_standalone`; the entry state is `None` when a chunk > 0 has none published.
    pub fn standalone_context(
        &self,
        chunk_index: u64,
        data: &[u8],
    ) -> (Option<ScanArch>, u64, Option<Registers>) {
        let shared = self.lock();
        let mut arch = shared.arch;
        let mut header = shared.header;
        if header == 0 {
            header = header_word(data);
            arch = arch.or_else(|| ScanArch::from_header(header));
        }
        let entry = if chunk_index == 0 {
            Some(Registers::default())
        } else {
            Self::entry_state(&shared, chunk_index)
        };
        (arch, header, entry)
    }

    /// Scans one chunk (API.md §4.13 steps 4–9); an empty chunk holds nothing to scan. `sink`
    /// is the client's callback (its absence is reported only after the predecessor state was
    /// found).
    pub fn quick_scan(
        &self,
        chunk_index: u64,
        data: &[u8],
        filter: Filter,
        sink: Option<&mut dyn RecordSink>,
    ) -> Result<(), DecodeError> {
        let chunk = chunk_index as usize;
        let error = |kind, offset| Err(DecodeError::new(kind, chunk, offset));
        if data.is_empty() {
            return Ok(());
        }
        if data.len() < 8 {
            return error(ErrorKind::ChunkTooShort, data.len());
        }
        let header = header_word(data);
        let (arch, header_skip) = if chunk_index == 0 {
            let arch = ScanArch::from_header(header);
            {
                let mut shared = self.lock();
                shared.arch = arch;
                if arch.is_some() {
                    shared.header = header;
                }
            }
            let skip = if arch == Some(ScanArch::Gfx9) { 8 } else { 0 };
            if data.len() == skip {
                self.publish(1, Registers::default());
                return Ok(());
            }
            (arch, skip)
        } else {
            let mut shared = self.lock();
            if shared.arch.is_none() {
                shared.arch = ScanArch::from_header(header);
            }
            (shared.arch, 0)
        };
        let mut registers = if chunk_index == 0 {
            Registers::default()
        } else {
            match self.wait_for(chunk_index) {
                Some(registers) => registers,
                None => return error(ErrorKind::MissingPreviousChunk, 0),
            }
        };
        let Some(sink) = sink else {
            return error(ErrorKind::MissingCallback, 0);
        };
        let result = match arch {
            Some(arch) => {
                let mut emitter = Emitter::new(sink, filter);
                let tokens = data.get(header_skip..).unwrap_or_default();
                super::replay(
                    arch,
                    &mut registers,
                    tokens,
                    chunk,
                    header_skip as u64,
                    Some(&mut emitter),
                )
            }
            // A family the scanner does not know holds nothing it reports.
            None => Ok(()),
        };
        self.publish(chunk_index.wrapping_add(1), registers);
        result
    }
}

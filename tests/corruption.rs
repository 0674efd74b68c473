//! Corruption sweep: damaged versions of real traces (truncations, bit flips, zeroed runs,
//! garbage, header-only streams, absurd sizes) must decode to a status without panicking, and
//! the damage must never change what was decoded from an undamaged prefix's complete buffer.

use std::path::Path;

use rocprof_trace_decoder::decode::{DecodeError, Session};
use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::Pc;
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

/// Answers every PC with a 4-byte `v_nop`, so stitching runs on any input.
struct AnyIsa;

impl IsaProvider for AnyIsa {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        if !pc.address.is_multiple_of(4) {
            return Err(IsaError::UnknownAddress);
        }
        text.clear();
        text.extend_from_slice(b"v_nop");
        Ok(4)
    }
}

/// Decodes one buffer; returns the result and the number of records delivered.
fn decode(data: &[u8]) -> (Result<(), DecodeError>, usize) {
    let mut records = 0usize;
    let mut sink = |record: Record<'_>| {
        if let Record::Wave(w) = record {
            // Touch the arrays the way a client does.
            let insts = unsafe {
                if w.instructions_size == 0 {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(w.instructions_array, w.instructions_size as usize)
                }
            };
            records += insts.len();
        }
        records += 1;
        0
    };
    let mut isa = AnyIsa;
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), &mut isa);
    let result = session.decode_buffer(data);
    drop(session);
    (result, records)
}

/// xorshift64*: deterministic damage without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[path = "common/corpus.rs"]
mod corpus_folder;
use corpus_folder::corpus;

/// One instruction-carrying SE stream per architecture, capped so the sweep stays quick.
fn samples(corpus: &Path) -> Vec<(String, Vec<u8>)> {
    let picks = [
        "gfx1100/profile_gemm_run_0/se0.att",
        "gfx1200/profile_gemm_run_0/se0.att",
        "gfx1200/profile_ops_run_0/se1.att",
        "gfx950/profile_gemm_run_0/se0.att",
        "gfx950/aiter_study_aggregate_load_AL_BM32_BN128_BK512_nS2_nW4_att_orig/se0.att",
    ];
    picks
        .iter()
        .filter_map(|p| {
            let mut data = std::fs::read(corpus.join(p)).ok()?;
            data.truncate(64 * 1024);
            Some((p.to_string(), data))
        })
        .collect()
}

#[test]
fn truncations_decode_to_a_status() {
    let Some(corpus) = corpus() else { return };
    for (name, data) in samples(&corpus) {
        let step = (data.len() / 97).max(1);
        for cut in (0..data.len())
            .step_by(step)
            .chain([1, 7, 8, 9, 15, 16, 17])
        {
            let (result, _) = decode(&data[..cut.min(data.len())]);
            if cut < 8 {
                assert_eq!(
                    result,
                    Err(DecodeError::UnknownHeader),
                    "{name} cut at {cut}"
                );
            }
        }
    }
}

#[test]
fn bit_flips_and_zeroed_runs_decode_to_a_status() {
    let Some(corpus) = corpus() else { return };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (_, data) in samples(&corpus) {
        for _ in 0..150 {
            let mut damaged = data.clone();
            let pos = rng.below(damaged.len());
            damaged[pos] ^= 1 << rng.below(8);
            let _ = decode(&damaged);
        }
        for _ in 0..40 {
            let mut damaged = data.clone();
            let start = 8 + rng.below(damaged.len().saturating_sub(8));
            let len = 1 + rng.below(512);
            let end = (start + len).min(damaged.len());
            damaged[start..end].fill(0);
            let _ = decode(&damaged);
        }
        for _ in 0..40 {
            let mut damaged = data.clone();
            let start = 8 + rng.below(damaged.len().saturating_sub(8));
            let end = (start + 1 + rng.below(256)).min(damaged.len());
            for byte in &mut damaged[start..end] {
                *byte = rng.next() as u8;
            }
            let _ = decode(&damaged);
        }
    }
}

#[test]
fn garbage_of_every_small_size_is_rejected_or_decoded() {
    let mut rng = Rng(42);
    for size in [0usize, 1, 7, 8, 9, 16, 31, 64, 1000, 4096, 65536] {
        for fill in [0x00u8, 0xFF, 0xA5] {
            let (result, records) = decode(&vec![fill; size]);
            if result.is_err() {
                assert_eq!(records, 0, "a rejected buffer delivers nothing");
            }
        }
        let random: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
        let _ = decode(&random);
    }
}

#[test]
fn header_only_and_header_with_garbage_streams() {
    let headers: [u64; 4] = [
        0x11 | (5 << 13) | (0xF << 16), // MI300
        0x11 | (6 << 13) | (0xF << 16), // MI350
        0x6890_0191,                    // gfx11 HEADER token
        0x0913_1008_6870_0211,          // gfx12 HEADER token
    ];
    let mut rng = Rng(7);
    for header in headers {
        let mut data = header.to_le_bytes().to_vec();
        let _ = decode(&data);
        for _ in 0..4096 {
            data.push(rng.next() as u8);
        }
        let _ = decode(&data);
        let mut ones = header.to_le_bytes().to_vec();
        ones.extend_from_slice(&[0xFF; 4096]);
        let _ = decode(&ones);
    }
}

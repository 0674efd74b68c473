//! Decodes one corpus example directory (`se*.att` + `code_object_0.isa.json`) and prints a
//! summary of the records, the way a profiler would consume them.
//!
//! usage: cargo run --release --example decode -- <example dir>
//! Without a readable directory it decodes a small built-in gfx9 trace instead.

#![forbid(unsafe_code)]

mod common;

use std::collections::BTreeMap;
use std::env;
use std::path::Path;

use rocprof_trace_decoder::{Decoder, Record};

use common::{se_files, IsaTable};

fn built_in_trace() -> Vec<u8> {
    let header: u64 = 0x11 | (5 << 13) | (0xF << 16);
    let mut data = header.to_le_bytes().to_vec();
    data.extend_from_slice(&[0; 64]);
    data
}

fn main() {
    let dir = env::args().nth(1).unwrap_or_default();
    let dir = Path::new(&dir);
    let mut buffers = se_files(dir);
    if buffers.is_empty() {
        println!("no traces in {:?}: decoding the built-in gfx9 example", dir);
        buffers.push(("built-in".into(), built_in_trace()));
    }
    let isa = IsaTable::load(dir).unwrap_or_default();

    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut instructions = 0u64;
    let mut first_wave: Option<Vec<i64>> = None;
    let mut decoder = Decoder::new(isa);
    for (name, data) in &buffers {
        let result = decoder.parse([data.as_slice()], |record| {
            let n = match &record {
                Record::Occupancy(r) => r.len(),
                Record::Realtime(r) => r.len(),
                Record::InstOtherSimd(r) => r.len(),
                Record::PerfEvent(r) => r.len(),
                Record::ShaderData(r) => r.len(),
                Record::Marker(r) => r.len(),
                Record::Wave(wave) => {
                    let insts = wave.instructions();
                    instructions += insts.len() as u64;
                    if first_wave.is_none() && !insts.is_empty() {
                        first_wave = Some(insts.iter().map(|i| i.time).collect());
                    }
                    1
                }
                _ => 1,
            } as u64;
            let entry = counts.entry(format!("{:?}", record.kind())).or_default();
            entry.0 += 1;
            entry.1 += n;
        });
        match result {
            Ok(()) => println!("{name}: {} bytes decoded", data.len()),
            Err(e) => println!("{name}: {e}"),
        }
    }
    println!("\nrecord type        callbacks    records");
    for (kind, (calls, records)) in &counts {
        println!("{kind:<18} {calls:>9} {records:>10}");
    }
    println!("instructions: {instructions}");
    if let Some(times) = first_wave {
        println!(
            "first wave's instruction times: {:?}",
            &times[..times.len().min(16)]
        );
    }
}

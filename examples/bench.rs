//! Decode benchmark over the corpus: MB/s, instructions per second and peak heap per example,
//! one SE buffer per parse (what rocprofv3 does) on one thread, then the scaling of SE-parallel
//! decoding over threads (what the att tool does).
//!
//! usage: cargo run --release --example bench -- [corpus dir] [--only SUBSTR] [--seconds S]
//! Peak heap is measured by a counting allocator: the most bytes the decoder held at once while
//! decoding the example (records are consumed by the callback as they arrive, as a client would).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use std::{env, fs, thread};

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

use common::{se_files, IsaTable};

struct CountingAllocator;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only adds bookkeeping.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Decodes every SE buffer in its own session; returns the instruction count.
fn decode_all(buffers: &[(String, Vec<u8>)], isa: &mut IsaTable) -> u64 {
    let mut instructions = 0u64;
    for (_, data) in buffers {
        let mut sink = |record: Record<'_>| {
            if let Record::Wave(w) = record {
                instructions += w.instructions_size;
            }
            0
        };
        let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), isa);
        let _ = session.decode_buffer(data);
    }
    instructions
}

fn examples(corpus: &Path, only: Option<&str>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for arch in ["gfx1100", "gfx1200", "gfx950"] {
        let Ok(entries) = fs::read_dir(corpus.join(arch)) else {
            continue;
        };
        let mut dirs: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        found.extend(
            dirs.into_iter()
                .filter(|d| only.is_none_or(|o| d.to_string_lossy().contains(o))),
        );
    }
    found
}

fn main() {
    let args: Vec<String> = env::args().skip(1).collect();
    let mut corpus = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
    let mut only = None;
    let mut seconds = 0.3f64;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--only" => {
                only = args.get(i + 1).cloned();
                i += 1;
            }
            "--seconds" => {
                seconds = args
                    .get(i + 1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(seconds);
                i += 1;
            }
            path => corpus = PathBuf::from(path),
        }
        i += 1;
    }
    let window = Duration::from_secs_f64(seconds);
    println!(
        "{:<72} {:>10} {:>9} {:>10} {:>12} {:>10}",
        "example", "bytes", "µs", "MB/s", "Minst/s", "peak KiB"
    );
    let mut total_bytes = 0usize;
    let mut total_time = 0f64;
    for dir in examples(&corpus, only.as_deref()) {
        let buffers = se_files(&dir);
        let Some(mut isa) = IsaTable::load(&dir) else {
            continue;
        };
        let bytes: usize = buffers.iter().map(|(_, d)| d.len()).sum();

        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let instructions = decode_all(&buffers, &mut isa);
        let peak = PEAK.load(Ordering::Relaxed) - base;

        let mut best = f64::MAX;
        let start = Instant::now();
        while start.elapsed() < window || best == f64::MAX {
            let t = Instant::now();
            decode_all(&buffers, &mut isa);
            best = best.min(t.elapsed().as_secs_f64());
        }
        total_bytes += bytes;
        total_time += best;
        let name = dir
            .strip_prefix(&corpus)
            .unwrap_or(&dir)
            .display()
            .to_string();
        println!(
            "{:<72} {:>10} {:>9.1} {:>10.1} {:>12.2} {:>10}",
            name,
            bytes,
            best * 1e6,
            bytes as f64 / best / 1e6,
            instructions as f64 / best / 1e6,
            peak / 1024
        );
    }
    if total_time > 0.0 {
        println!(
            "all examples: {:.1} MB/s on one thread",
            total_bytes as f64 / total_time / 1e6
        );
    }

    // SE-parallel scaling on the largest example: each thread decodes whole SE buffers.
    let Some(largest) = examples(&corpus, only.as_deref())
        .into_iter()
        .max_by_key(|d| se_files(d).iter().map(|(_, b)| b.len()).sum::<usize>())
    else {
        return;
    };
    let buffers = se_files(&largest);
    let bytes: usize = buffers.iter().map(|(_, d)| d.len()).sum();
    println!(
        "\nSE-parallel decoding of {} ({} SE files):",
        largest.display(),
        buffers.len()
    );
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    for threads in 1..=cores.min(buffers.len()).max(1) {
        let mut best = f64::MAX;
        let start = Instant::now();
        while start.elapsed() < window || best == f64::MAX {
            let t = Instant::now();
            thread::scope(|scope| {
                for chunk in buffers.chunks(buffers.len().div_ceil(threads)) {
                    let dir = largest.clone();
                    scope.spawn(move || {
                        if let Some(mut isa) = IsaTable::load(&dir) {
                            decode_all(chunk, &mut isa);
                        }
                    });
                }
            });
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "  {threads} thread(s): {:.1} MB/s",
            bytes as f64 / best / 1e6
        );
    }
}

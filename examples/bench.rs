//! Decode benchmark over the corpus, one SE buffer per parse (what rocprofv3 does), on one thread:
//! MB/s and instructions per second through the Rust API, then through the C ABI (V1
//! `rocprof_trace_decoder_parse_data` and V2 `rocprof_trace_decoder_parse`), and peak heap per
//! example; then the scaling of SE-parallel decoding over threads (what the att tool does).
//!
//! usage: cargo run --release --example bench -- [corpus dir] [--only SUBSTR] [--seconds S]
//!        [--repeat N] [--markdown] [--threads N,M,...]
//! (`RTD_PGO=ON scripts/bench.sh` runs it built with the library's PGO profile, as
//! `cmake -DRTD_PGO=ON` does.)
//! Times are the CPU time of the decoding thread (best of a window of `S` seconds), so other
//! processes on the machine distort them little. Peak heap is measured by a counting allocator:
//! the most bytes the decoder held at once (records are consumed by the callback as they arrive,
//! as a client would). `--repeat N` decodes, per example, its largest SE stream repeated N times
//! inside one buffer and compares the peak heap with a single copy's: it must not grow with the
//! trace length. The speed-up is against the reference decoder's MB/s in the side-by-side table
//! of `spec/REFERENCE_BEHAVIOUR.md` §11a beside the corpus (another run on this machine class);
//! `--markdown` prints the tables of docs/PERFORMANCE.md.
//! `--threads` runs only the SE-parallel scaling, on the largest example selected, with each of
//! the given thread counts (default: 1, 2 and every core).

mod common;
#[path = "common/drive.rs"]
mod drive;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::{env, fs, thread};

use common::{se_files, IsaTable};
use drive::{decode_c, decode_rust, CApi};

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

/// CPU time of the calling thread, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Best CPU time of one run of `f` over a window of `seconds`. Runs are timed in batches of at
/// least a millisecond: the thread CPU clock is too coarse for a single small example.
fn best_time(seconds: f64, mut f: impl FnMut()) -> f64 {
    let mut batch = 1u32;
    loop {
        let t = thread_cpu_seconds();
        (0..batch).for_each(|_| f());
        if thread_cpu_seconds() - t >= 1e-3 || batch >= 1 << 20 {
            break;
        }
        batch *= 2;
    }
    let mut best = f64::MAX;
    let start = thread_cpu_seconds();
    while best == f64::MAX || thread_cpu_seconds() - start < seconds {
        let t = thread_cpu_seconds();
        (0..batch).for_each(|_| f());
        best = best.min((thread_cpu_seconds() - t) / f64::from(batch));
    }
    best
}

/// The most heap `f` held at once beyond what was in use before it, in bytes. `f` runs on a fresh
/// thread, so the buffers the decoder keeps per thread between parse calls count too.
fn peak_heap(f: impl FnOnce() + Send) -> usize {
    thread::scope(|scope| {
        scope
            .spawn(|| {
                let base = CURRENT.load(Ordering::Relaxed);
                PEAK.store(base, Ordering::Relaxed);
                f();
                PEAK.load(Ordering::Relaxed) - base
            })
            .join()
            .unwrap_or(0)
    })
}

fn examples(corpus: &Path, only: Option<&str>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut archs: Vec<PathBuf> = fs::read_dir(corpus)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    archs.retain(|a| {
        a.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("gfx"))
    });
    archs.sort();
    for arch in archs {
        let Ok(entries) = fs::read_dir(arch) else {
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

/// The reference decoder's per-example MB/s (V1, one parse call per SE buffer), from the
/// side-by-side table of `spec/REFERENCE_BEHAVIOUR.md` §11a beside the corpus, when it is there.
/// That run was on another VM of this machine class: a ratio to it moves with the machine's
/// clock (about 10 %); the same-run comparison is `../shared/tools/perf/bench.c`.
fn reference_mb_per_s(corpus: &Path) -> HashMap<String, f64> {
    let Ok(text) = fs::read_to_string(corpus.join("../spec/REFERENCE_BEHAVIOUR.md")) else {
        return HashMap::new();
    };
    text.lines()
        .skip_while(|line| !line.starts_with("### 11a"))
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let mb_per_s = cells.get(3)?.parse().ok()?;
            Some((cells.get(1)?.to_string(), mb_per_s))
        })
        .collect()
}

/// The trace class of an example (`gfx1200/tg_f8de1939_gemm_big_k2` is `gfx1200 tg`): its
/// architecture and its family, the first word of its name (`profile`, `tg`, `aiter`,
/// `hipkittens`).
fn class_of(name: &str) -> String {
    let (arch, example) = name.split_once('/').unwrap_or(("", name));
    let family = example.split('_').next().unwrap_or(example);
    format!("{arch} {family}")
}

/// Bytes, CPU seconds and instruction records of the examples of one class.
#[derive(Default)]
struct ClassTotals {
    examples: usize,
    bytes: usize,
    seconds: f64,
    instructions: u64,
}

fn mb_per_s(bytes: usize, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e6
}

fn main() {
    let args: Vec<String> = env::args().skip(1).collect();
    let mut corpus = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
    let mut only = None;
    let mut seconds = 0.3f64;
    let mut repeat = None;
    let mut markdown = false;
    let mut threads = None;
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1);
        match args[i].as_str() {
            "--only" => only = value.cloned(),
            "--seconds" => seconds = value.and_then(|s| s.parse().ok()).unwrap_or(seconds),
            "--repeat" => repeat = value.and_then(|s| s.parse::<usize>().ok()),
            "--threads" => {
                threads = value.map(|list| {
                    list.split(',')
                        .filter_map(|n| n.trim().parse::<usize>().ok())
                        .filter(|&n| n > 0)
                        .collect::<Vec<_>>()
                })
            }
            "--markdown" => {
                markdown = true;
                i -= 1;
            }
            path => {
                corpus = PathBuf::from(path);
                i -= 1;
            }
        }
        i += 2;
    }
    let examples = examples(&corpus, only.as_deref());
    if let Some(n) = repeat {
        synthetic(&corpus, &examples, n.max(1), seconds);
        return;
    }
    if let Some(counts) = threads {
        scaling(&examples, seconds, &counts);
        return;
    }

    let reference = reference_mb_per_s(&corpus);
    if markdown {
        println!("| example | reference µs | reference MB/s | ours µs | ours MB/s | speed-up | V1 MB/s | V2 MB/s | peak heap KiB |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    } else {
        println!(
            "{:<60} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8}",
            "example (CPU time, one SE per parse)",
            "bytes",
            "µs",
            "MB/s",
            "Minst/s",
            "V1 MB/s",
            "V2 MB/s",
            "peak KiB",
            "vs ref"
        );
    }
    let mut total_bytes = 0usize;
    let mut total_time = 0f64;
    let mut classes: std::collections::BTreeMap<String, ClassTotals> = Default::default();
    for dir in &examples {
        let buffers: Vec<Vec<u8>> = se_files(dir).into_iter().map(|(_, d)| d).collect();
        let Some(mut isa) = IsaTable::load(dir) else {
            continue;
        };
        let bytes: usize = buffers.iter().map(Vec::len).sum();
        let mut instructions = 0;
        let peak = peak_heap(|| instructions = decode_rust(&buffers, &mut isa));
        let rust = best_time(seconds, || {
            decode_rust(&buffers, &mut isa);
        });
        let v1 = best_time(seconds, || {
            decode_c(CApi::V1, &buffers, &mut isa);
        });
        let v2 = best_time(seconds, || {
            decode_c(CApi::V2, &buffers, &mut isa);
        });
        total_bytes += bytes;
        total_time += rust;
        let name = dir
            .strip_prefix(&corpus)
            .unwrap_or(dir)
            .display()
            .to_string();
        let class = classes.entry(class_of(&name)).or_default();
        class.examples += 1;
        class.bytes += bytes;
        class.seconds += rust;
        class.instructions += instructions;
        let reference = reference
            .get(&name)
            .map(|&mb_per_s| bytes as f64 / mb_per_s);
        let speed_up = reference.map_or(String::from("-"), |r| format!("{:.1}×", r / (rust * 1e6)));
        if markdown {
            let (ref_us, ref_mb) = reference.map_or((String::from("-"), String::from("-")), |r| {
                (
                    format!("{r:.1}"),
                    format!("{:.1}", mb_per_s(bytes, r * 1e-6)),
                )
            });
            println!(
                "| {name} | {ref_us} | {ref_mb} | {:.1} | {:.1} | {speed_up} | {:.1} | {:.1} | {} |",
                rust * 1e6,
                mb_per_s(bytes, rust),
                mb_per_s(bytes, v1),
                mb_per_s(bytes, v2),
                peak / 1024
            );
        } else {
            println!(
                "{:<60} {:>9} {:>9.1} {:>7.1} {:>7.2} {:>7.1} {:>7.1} {:>8} {:>8}",
                name.chars().take(60).collect::<String>(),
                bytes,
                rust * 1e6,
                mb_per_s(bytes, rust),
                instructions as f64 / rust / 1e6,
                mb_per_s(bytes, v1),
                mb_per_s(bytes, v2),
                peak / 1024,
                speed_up
            );
        }
    }
    if total_time > 0.0 {
        println!(
            "all examples: {:.1} MB/s on one thread",
            mb_per_s(total_bytes, total_time)
        );
    }
    println!("\nby trace class (Rust API, one thread; the sums of the examples' best times):");
    println!("| class | examples | MB | MB/s | instructions | ns per instruction |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (class, t) in &classes {
        println!(
            "| {class} | {} | {:.2} | {:.0} | {} | {:.1} |",
            t.examples,
            t.bytes as f64 / 1e6,
            mb_per_s(t.bytes, t.seconds),
            t.instructions,
            t.seconds * 1e9 / t.instructions.max(1) as f64
        );
    }
    scaling(&examples, seconds, &[]);
}

/// Per example: its largest SE stream once and repeated `n` times inside one buffer.
fn synthetic(corpus: &Path, examples: &[PathBuf], n: usize, seconds: f64) {
    println!(
        "{:<60} {:>10} {:>9} {:>12} {:>12}",
        "example (largest SE stream)",
        "bytes",
        "MB/s",
        "peak KiB ×1",
        format!("peak KiB ×{n}")
    );
    for dir in examples {
        let Some(mut isa) = IsaTable::load(dir) else {
            continue;
        };
        let Some((_, stream)) = se_files(dir).into_iter().max_by_key(|(_, d)| d.len()) else {
            continue;
        };
        let repeated = [stream.repeat(n)];
        let once = [stream];
        let peak_once = peak_heap(|| {
            decode_c(CApi::V2, &once, &mut isa);
        });
        let peak_repeated = peak_heap(|| {
            decode_c(CApi::V2, &repeated, &mut isa);
        });
        let time = best_time(seconds, || {
            decode_c(CApi::V2, &repeated, &mut isa);
        });
        let name = dir
            .strip_prefix(corpus)
            .unwrap_or(dir)
            .display()
            .to_string();
        println!(
            "{:<60} {:>10} {:>9.1} {:>12} {:>12}",
            name.chars().take(60).collect::<String>(),
            repeated[0].len(),
            mb_per_s(repeated[0].len(), time),
            peak_once / 1024,
            peak_repeated / 1024
        );
    }
}

/// SE-parallel decoding of the largest example: each thread decodes whole SE buffers, `counts`
/// threads at a time (none given: 1, 2 and every core), through the Rust API. The speed-up is
/// against the first count's throughput.
fn scaling(examples: &[PathBuf], seconds: f64, counts: &[usize]) {
    let Some(largest) = examples
        .iter()
        .max_by_key(|d| se_files(d).iter().map(|(_, b)| b.len()).sum::<usize>())
    else {
        return;
    };
    let buffers: Vec<Vec<u8>> = se_files(largest).into_iter().map(|(_, d)| d).collect();
    let bytes: usize = buffers.iter().map(Vec::len).sum();
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts = counts.to_vec();
    if counts.is_empty() {
        counts = vec![1, 2, cores];
        counts.dedup();
    }
    println!(
        "\nSE-parallel decoding of {} ({} SE files, {cores} cores), wall time:",
        largest.display(),
        buffers.len()
    );
    let mut first = None;
    for threads in counts {
        let chunks: Vec<&[Vec<u8>]> = buffers
            .chunks(buffers.len().div_ceil(threads).max(1))
            .collect();
        // One ISA table per thread, loaded before the clock starts.
        let mut tables: Vec<IsaTable> = chunks
            .iter()
            .filter_map(|_| IsaTable::load(largest))
            .collect();
        let mut best = f64::MAX;
        let start = std::time::Instant::now();
        while best == f64::MAX || start.elapsed().as_secs_f64() < seconds {
            // Each worker decodes its share once untimed (a tool's worker threads are warm), then
            // all start together; the wall time runs from the first start to the last end.
            let ready = std::sync::Barrier::new(chunks.len());
            let spans: Vec<(std::time::Instant, std::time::Instant)> = thread::scope(|scope| {
                let workers: Vec<_> = chunks
                    .iter()
                    .zip(tables.iter_mut())
                    .map(|(chunk, isa)| {
                        let ready = &ready;
                        scope.spawn(move || {
                            decode_rust(chunk, isa);
                            ready.wait();
                            let start = std::time::Instant::now();
                            decode_rust(chunk, isa);
                            (start, std::time::Instant::now())
                        })
                    })
                    .collect();
                workers.into_iter().filter_map(|w| w.join().ok()).collect()
            });
            if let (Some(first), Some(last)) = (
                spans.iter().map(|s| s.0).min(),
                spans.iter().map(|s| s.1).max(),
            ) {
                best = best.min((last - first).as_secs_f64());
            }
        }
        let rate = mb_per_s(bytes, best);
        let base = *first.get_or_insert(rate);
        println!(
            "  {threads} thread(s) ({} in use): {rate:.1} MB/s, {:.2}× the first",
            chunks.len(),
            rate / base
        );
    }
}

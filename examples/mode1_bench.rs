//! Mode 1 speed per disassembler back-end: every corpus example that ships its code objects is
//! decoded as `tests/mode1_golden.py` decodes it (per SE file a fresh code-object table, the
//! example's code objects loaded, one parse with no ISA callback), once through the built-in
//! tables and once through each library back-end found (libLLVM 22 and 19, COMGR), in the same
//! process, alternating rounds. Prints, per architecture, the CPU time of the best round of each
//! back-end (load and parse; the PCs each parse visits are disassembled by that parse).
//!
//! usage: cargo run --release --example mode1_bench -- [corpus dir] [--only SUBSTR] [--rounds N]

// Only `se_files` of the shared helpers is used here.
#[allow(dead_code)]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::{env, fs};

use common::se_files;
use rocprof_trace_decoder::isa::backend::{Backend, BackendKind};
use rocprof_trace_decoder::isa::codeobj::CodeObjectTable;
use rocprof_trace_decoder::{Decoder, Record};

/// A code object as `tests/mode1_golden.py` loads it.
struct CodeObject {
    load_id: u64,
    load_addr: u64,
    load_size: u64,
    elf: Vec<u8>,
}

struct Case {
    arch: String,
    se_buffers: Vec<Vec<u8>>,
    objects: Vec<CodeObject>,
}

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}

/// The example's code objects, with mode1_golden.py's ids, bases and sizes; `None` when it does
/// not ship every one of them.
fn code_objects(dir: &Path, meta: &serde_json::Value) -> Option<Vec<CodeObject>> {
    let listed = meta["code_objects"].as_array().filter(|l| !l.is_empty())?;
    listed
        .iter()
        .map(|object| {
            let file = object["file"].as_str()?;
            let elf = fs::read(dir.join(file)).ok()?;
            let isa = json(&dir.join(format!("{}.isa.json", file.strip_suffix(".elf")?)))?;
            let instruction_end = isa["instructions"]
                .as_array()?
                .iter()
                .filter_map(|row| Some(row[0].as_u64()? + row[1].as_u64()?))
                .max()?;
            let text = &isa["text_section"];
            let text_end = text["vaddr"].as_u64().unwrap_or(0) + text["size"].as_u64().unwrap_or(0);
            Some(CodeObject {
                load_id: object["trace_code_object_id"].as_u64().unwrap_or(1),
                load_addr: object["load_base"].as_u64().unwrap_or(0),
                load_size: instruction_end.max(text_end),
                elf,
            })
        })
        .collect()
}

fn cases(corpus: &Path, only: Option<&str>) -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(corpus)
        .into_iter()
        .flatten()
        .filter_map(|arch| fs::read_dir(arch.ok()?.path()).ok())
        .flatten()
        .filter_map(|example| Some(example.ok()?.path()))
        .filter(|dir| only.is_none_or(|o| dir.to_string_lossy().contains(o)))
        .collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|dir| {
            let meta = json(&dir.join("meta.json"))?;
            let objects = code_objects(&dir, &meta)?;
            Some(Case {
                arch: dir.parent()?.file_name()?.to_string_lossy().into_owned(),
                se_buffers: se_files(&dir).into_iter().map(|(_, data)| data).collect(),
                objects,
            })
        })
        .collect()
}

/// Decodes every SE buffer of `case` through `backends`; the instructions decoded, or `None` when
/// they cannot load one of its code objects.
fn decode(backends: &'static [Backend], case: &Case) -> Option<u64> {
    let mut instructions = 0;
    for buffer in &case.se_buffers {
        let mut table = CodeObjectTable::with_backends(backends);
        for o in &case.objects {
            table
                .load(o.load_id, o.load_addr, o.load_size, &o.elf)
                .ok()?;
        }
        let mut decoder = Decoder::new(table);
        // A damaged buffer keeps what was decoded before the damage, as in the golden check.
        let _ = decoder.parse([buffer.as_slice()], |record| {
            if let Record::Wave(wave) = record {
                instructions += wave.instructions().len() as u64;
            }
        });
    }
    Some(instructions)
}

fn main() {
    let mut args = env::args().skip(1);
    let mut corpus = PathBuf::from("../shared/corpus");
    let (mut only, mut rounds) = (None, 3);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--only" => only = args.next(),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--rounds N")
            }
            _ => corpus = PathBuf::from(arg),
        }
    }
    let cases = cases(&corpus, only.as_deref());
    assert!(
        !cases.is_empty(),
        "no example with code objects under {}",
        corpus.display()
    );

    let mut backends: Vec<(String, &'static [Backend])> =
        vec![("built-in".into(), Vec::leak(vec![Backend::builtin()]))];
    for major in [22, 19] {
        if let Some(llvm) = Backend::llvm(major) {
            backends.push((format!("libLLVM {major}"), Vec::leak(vec![llvm])));
        }
    }
    let comgr = ["libamd_comgr.so.3", "libamd_comgr.so.2"]
        .iter()
        .filter_map(|name| Backend::load(name))
        .find(|backend| backend.kind() == BackendKind::Comgr);
    if let Some(comgr) = comgr {
        backends.push(("COMGR".into(), Vec::leak(vec![comgr])));
    }

    // best[backend][arch] = (seconds, instructions, examples) of its best round; an arch with an
    // example the back-end cannot load is left out for it.
    let mut best: Vec<BTreeMap<&str, (f64, u64, usize)>> = vec![BTreeMap::new(); backends.len()];
    for _ in 0..rounds {
        for (index, (_, list)) in backends.iter().enumerate() {
            let mut round: BTreeMap<&str, Option<(f64, u64, usize)>> = BTreeMap::new();
            for case in &cases {
                let start = thread_cpu_seconds();
                let decoded = decode(list, case);
                let seconds = thread_cpu_seconds() - start;
                let totals = round.entry(&case.arch).or_insert(Some((0.0, 0, 0)));
                *totals = totals
                    .zip(decoded)
                    .map(|((t, n, e), i)| (t + seconds, n + i, e + 1));
            }
            for (arch, totals) in round.into_iter().filter_map(|(a, t)| Some((a, t?))) {
                let slot = best[index].entry(arch).or_insert(totals);
                if totals.0 < slot.0 {
                    *slot = totals;
                }
            }
        }
    }

    // Back-ends that know none of the examples' targets get no column.
    let columns: Vec<usize> = (0..backends.len())
        .filter(|&i| !best[i].is_empty())
        .collect();
    let names: Vec<&str> = columns.iter().map(|&i| backends[i].0.as_str()).collect();
    println!("CPU milliseconds of the best of {rounds} rounds (n/a: cannot load every example's code objects)");
    println!(
        "| arch | examples | instructions | {} ms |",
        names.join(" ms | ")
    );
    println!("|---|---:|---:|{}", "---:|".repeat(names.len()));
    for (arch, &(_, instructions, examples)) in &best[0] {
        // The records do not depend on the back-end: a different instruction count is a bug.
        let cells: Vec<String> = columns
            .iter()
            .map(|&i| match best[i].get(arch) {
                Some(&(t, n, _)) if n == instructions => format!("{:.1}", t * 1e3),
                Some(&(_, n, _)) => format!("{n} instructions!"),
                None => "n/a".into(),
            })
            .collect();
        println!(
            "| {arch} | {examples} | {instructions} | {} |",
            cells.join(" | ")
        );
    }
}

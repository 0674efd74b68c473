//! `quick_scan` and `build_standalone` over the real traces of `../shared/corpus`: the scan
//! finds exactly the dispatches the full decode reports, and a standalone cut at a dispatch
//! decodes to the same waves as the matching part of the full decode.

#[path = "../examples/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use common::{se_files, IsaTable};
use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::records::{Dispatch, Pc};
use rocprof_trace_decoder::scan::chunks::ScanChunks;
use rocprof_trace_decoder::scan::standalone;
use rocprof_trace_decoder::sink::check::Checked;
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

#[path = "common/corpus.rs"]
mod corpus_folder;
use corpus_folder::corpus;

/// A wave reduced to what a cut must reproduce: identity and every instruction's category,
/// stall, duration and PC (times depend on where the clock starts).
type WaveSignature = (u8, u8, u8, Vec<(u8, u32, i32, Pc)>);

#[derive(Default)]
struct Decoded {
    dispatches: Vec<Dispatch>,
    waves: Vec<WaveSignature>,
}

fn decode(trace: &[u8], isa: &mut IsaTable) -> Decoded {
    let mut out = Decoded::default();
    let mut sink = |r: Record<'_>| {
        match r {
            Record::Dispatch(d) => out.dispatches.push(*d),
            Record::Wave(w) if w.instructions_size > 0 => {
                // SAFETY: the wave's arrays are valid during the callback.
                let insts = unsafe {
                    std::slice::from_raw_parts(w.instructions_array, w.instructions_size as usize)
                };
                let insts = insts
                    .iter()
                    .map(|i| (i.category(), i.stall(), i.duration, i.pc))
                    .collect();
                out.waves.push((w.cu, w.simd, w.wave_id, insts));
            }
            _ => {}
        }
        0
    };
    let mut sink = Checked(&mut sink);
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), isa);
    session.decode_buffer(trace).unwrap();
    drop(session);
    out
}

fn quick_scan(trace: &[u8]) -> Vec<Dispatch> {
    let mut dispatches = Vec::new();
    let mut sink = |r: Record<'_>| {
        if let Record::Dispatch(d) = r {
            dispatches.push(*d);
        }
        0
    };
    let scanned = ScanChunks::default().quick_scan(0, trace, Filter::default(), Some(&mut sink));
    assert_eq!(scanned, Ok(()));
    dispatches
}

/// The example folders of `arch`.
fn examples(corpus: &Path, arch: &str) -> Vec<PathBuf> {
    let mut examples: Vec<_> = std::fs::read_dir(corpus.join(arch))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    examples.sort();
    examples
}

fn check_scan_matches_decode(arch: &str) {
    let Some(corpus) = corpus() else { return };
    let mut with_dispatches = 0;
    for example in examples(&corpus, arch) {
        let mut isa = IsaTable::load(&example).unwrap();
        for (file, trace) in se_files(&example) {
            let full = decode(&trace, &mut isa);
            let scanned = quick_scan(&trace);
            let untimed: Vec<Dispatch> = full
                .dispatches
                .iter()
                .map(|d| Dispatch { time: 0, ..*d })
                .collect();
            assert_eq!(scanned, untimed, "{file}");
            with_dispatches += usize::from(!scanned.is_empty());
        }
    }
    assert!(with_dispatches > 0, "no {arch} trace carries a dispatch");
}

#[test]
fn gfx950_quick_scan_finds_the_decoded_dispatches() {
    check_scan_matches_decode("gfx950");
}

#[test]
fn gfx1200_quick_scan_finds_the_decoded_dispatches() {
    check_scan_matches_decode("gfx1200");
}

/// Cuts every trace of `arch` that has a dispatch at its first one; every wave that starts
/// inside the cut equals a wave of the full decode. Without `timed`, stalls and durations are
/// left out: the gfx9 clock is re-based at the first TIME token after the cut, so a wait that
/// spans it measures differently.
fn check_cuts(arch: &str, timed: bool) {
    let Some(corpus) = corpus() else { return };
    let mut matched = 0;
    let traces = examples(&corpus, arch).into_iter().flat_map(|example| {
        se_files(&example)
            .into_iter()
            .map(move |(file, trace)| (file, trace, example.clone()))
    });
    for (file, trace, example) in traces {
        let mut isa = IsaTable::load(&example).unwrap();
        let mut full = decode(&trace, &mut isa);
        let Some(dispatch) = full.dispatches.first() else {
            continue;
        };
        let chunks = ScanChunks::default();
        let begin = dispatch.byte_offset as usize;
        let cut = standalone::build(&chunks, 0, &trace, begin, trace.len()).unwrap();
        let mut bytes = vec![0u8; cut.size()];
        cut.write_to(&mut bytes);
        let mut part = decode(&bytes, &mut isa);
        if !timed {
            for wave in full.waves.iter_mut().chain(part.waves.iter_mut()) {
                for inst in wave.3.iter_mut() {
                    (inst.1, inst.2) = (0, 0);
                }
            }
        }
        // Waves the cut saw start carry real PCs; waves cut in half start from PC {0,0}.
        let started: Vec<_> = part
            .waves
            .iter()
            .filter(|w| w.3.first().is_some_and(|i| i.3 != Pc::NONE))
            .collect();
        let mut pool = full.waves.clone();
        for wave in &started {
            let at = pool.iter().position(|w| w == *wave);
            assert!(
                at.is_some(),
                "{}: a cut wave is not in the full decode",
                file
            );
            pool.swap_remove(at.unwrap());
        }
        assert_eq!(part.dispatches.len(), full.dispatches.len(), "{}", file);
        matched += started.len();
    }
    assert!(matched > 0, "no {arch} cut reproduced a wave");
}

#[test]
fn gfx950_standalone_cuts_decode_to_the_same_waves() {
    check_cuts("gfx950", false);
}

#[test]
fn gfx1200_standalone_cuts_decode_to_the_same_waves() {
    check_cuts("gfx1200", true);
}

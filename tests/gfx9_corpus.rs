//! gfx9 corpus (gfx90a, gfx942, gfx950) vs the v0.1.6 goldens, through the Rust API (one parse per SE file, as the
//! goldens were made). Reads the shared corpus (`tests/common/corpus.rs`).
//!
//! `GFX9_EXAMPLE=<substring>` limits the run, `GFX9_SHOW=<n>` prints the first n differences.

use std::collections::HashMap;
use std::path::Path;

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::{Occupancy, Pc};
use rocprof_trace_decoder::sink::check::Checked;
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};
use serde_json::Value;

#[path = "common/corpus.rs"]
mod corpus_folder;
use corpus_folder::{corpus, hold_to_known_differences, read_golden};

/// ISA answers from `code_object_*.isa.json`, keyed like the golden generator keys them.
struct JsonIsa {
    by_runtime: HashMap<u64, (Vec<u8>, u64)>,
    by_marker: HashMap<(u64, u64), (Vec<u8>, u64)>,
    vnop: bool,
}

impl JsonIsa {
    fn load(example: &Path, vnop: bool) -> JsonIsa {
        let meta: Value =
            serde_json::from_slice(&std::fs::read(example.join("meta.json")).unwrap()).unwrap();
        let mut isa = JsonIsa {
            by_runtime: HashMap::new(),
            by_marker: HashMap::new(),
            vnop,
        };
        for co in meta["code_objects"].as_array().unwrap() {
            let file = co["isa_file"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    co["file"]
                        .as_str()
                        .unwrap()
                        .trim_end_matches(".elf")
                        .to_owned()
                        + ".isa.json"
                });
            let table: Value =
                serde_json::from_slice(&std::fs::read(example.join(file)).unwrap()).unwrap();
            for row in table["instructions"].as_array().unwrap() {
                let vaddr = row[0].as_u64().unwrap();
                let answer = (
                    row[2].as_str().unwrap().as_bytes().to_vec(),
                    row[1].as_u64().unwrap(),
                );
                if let Some(base) = co["load_base"].as_u64() {
                    isa.by_runtime.insert(base + vaddr, answer.clone());
                }
                if let Some(id) = co["trace_code_object_id"].as_u64().filter(|&id| id != 0) {
                    isa.by_marker.insert((id, vaddr), answer);
                }
            }
        }
        isa
    }
}

impl IsaProvider for JsonIsa {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        let answer = if pc.code_object_id == 0 {
            self.by_runtime.get(&pc.address)
        } else {
            self.by_marker.get(&(pc.code_object_id, pc.address))
        };
        let (t, size) = answer.ok_or(IsaError::UnknownAddress)?;
        text.clear();
        if self.vnop {
            text.extend_from_slice(b"v_nop");
            let endpgm = t.starts_with(b"s_endpgm");
            return Ok(if endpgm { 0 } else { *size });
        }
        text.extend_from_slice(t);
        Ok(*size)
    }
}

/// One callback as JSON in the golden's shape.
fn to_json(record: Record<'_>) -> Option<(String, Value)> {
    let occ = |o: &Occupancy| {
        serde_json::json!([
            o.pc.address,
            o.pc.code_object_id,
            o.time,
            o.reserved,
            o.cu,
            o.simd,
            o.wave_id,
            o.bits & 1,
            0
        ])
    };
    Some(match record {
        Record::Gfxip(v) => ("GFXIP".into(), serde_json::json!({ "pointer_value": v })),
        Record::Occupancy(rows) => ("OCCUPANCY".into(), rows.iter().map(occ).collect()),
        Record::Wave(w) => {
            // SAFETY: the arrays are valid for the duration of the callback.
            let insts = if w.instructions_size == 0 {
                &[][..]
            } else {
                unsafe {
                    std::slice::from_raw_parts(w.instructions_array, w.instructions_size as usize)
                }
            };
            let timeline = if w.timeline_size == 0 {
                &[][..]
            } else {
                unsafe { std::slice::from_raw_parts(w.timeline_array, w.timeline_size as usize) }
            };
            let wave = serde_json::json!({
                "cu": w.cu, "simd": w.simd, "wave_id": w.wave_id, "contexts": w.contexts,
                "begin_time": w.begin_time, "end_time": w.end_time,
                "_rsvd1": 0, "_rsvd2": 0, "_rsvd3": 0,
                "timeline_size": w.timeline_size, "instructions_size": w.instructions_size,
                "timeline_array_null": w.timeline_array.is_null(),
                "instructions_array_null": w.instructions_array.is_null(),
                "timeline": timeline.iter().map(|s| serde_json::json!([s.kind, s.duration])).collect::<Vec<_>>(),
                "instructions": insts.iter().map(|i| serde_json::json!([i.category(), i.stall(), i.duration,
                    i.time, i.pc.address, i.pc.code_object_id])).collect::<Vec<_>>(),
            });
            ("WAVE".into(), Value::Array(vec![wave]))
        }
        Record::Realtime(rows) => (
            "REALTIME".into(),
            rows.iter()
                .map(|r| serde_json::json!([r.shader_clock, r.realtime_clock, r.reserved]))
                .collect(),
        ),
        Record::Info(code) => ("INFO".into(), serde_json::json!([code as u32])),
        Record::PerfEvent(rows) => ("PERFEVENT".into(), serde_json::json!(rows.len())),
        Record::ShaderData(rows) => ("SHADERDATA".into(), serde_json::json!(rows.len())),
        Record::RtFrequency(hz) => ("RT_FREQUENCY".into(), serde_json::json!([hz])),
        Record::InstOtherSimd(rows) => ("INST_OTHER_SIMD".into(), serde_json::json!(rows.len())),
        Record::Event(_) | Record::Dispatch(_) | Record::Marker(_) => return None,
    })
}

fn decode(trace: &[u8], isa: &mut JsonIsa) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut sink = |r: Record<'_>| {
        out.extend(to_json(r));
        0
    };
    let mut sink = Checked(&mut sink);
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), isa);
    let _ = session.decode_buffer(trace);
    drop(session);
    out
}

#[derive(Default)]
struct Tally {
    ses: usize,
    ses_exact: usize,
    insts: usize,
    fields: [usize; 6],
    insts_exact: usize,
    waves: usize,
    waves_exact: usize,
    timelines_exact: usize,
    occupancy_exact: usize,
    occupancy: usize,
}

fn compare_wave(
    g: &Value,
    m: &Value,
    t: &mut Tally,
    shown: &mut usize,
    show: usize,
    ctx: &str,
    isa: &JsonIsa,
) {
    let skip_mfma = std::env::var("GFX9_SKIP_MFMA").is_ok();
    t.waves += 1;
    if g == m {
        t.waves_exact += 1;
    }
    t.timelines_exact += (g["timeline"] == m["timeline"]) as usize;
    let gi = g["instructions"].as_array().unwrap();
    let mi = m["instructions"].as_array().cloned().unwrap_or_default();
    for (k, gr) in gi.iter().enumerate() {
        if skip_mfma {
            let pc = (gr[4].as_u64().unwrap(), gr[5].as_u64().unwrap());
            let text = isa
                .by_marker
                .get(&(pc.1, pc.0))
                .map(|a| a.0.clone())
                .unwrap_or_default();
            if text.starts_with(b"v_mfma_scale") {
                continue;
            }
        }
        t.insts += 1;
        let Some(mr) = mi.get(k) else { continue };
        let mut all = true;
        for f in 0..6 {
            if gr[f] == mr[f] {
                t.fields[f] += 1;
            } else {
                all = false;
            }
        }
        if all {
            t.insts_exact += 1;
        } else if *shown < show {
            *shown += 1;
            let prev: Vec<_> = gi[k.saturating_sub(2)..k].iter().collect();
            println!("{ctx} inst {k}: golden {gr} mine {mr}   (golden prev {prev:?})");
        }
    }
    for key in ["begin_time", "end_time", "simd", "wave_id", "cu"] {
        if g[key] != m[key] && *shown < show {
            *shown += 1;
            println!("{ctx} {key}: golden {} mine {}", g[key], m[key]);
        }
    }
    if gi.len() != mi.len() && *shown < show {
        *shown += 1;
        println!(
            "{ctx} instruction count golden {} mine {}",
            gi.len(),
            mi.len()
        );
    }
    if g["timeline"] != m["timeline"] && *shown < show {
        *shown += 1;
        let (gt, mt) = (
            g["timeline"].as_array().unwrap(),
            m["timeline"].as_array().unwrap(),
        );
        let first = gt
            .iter()
            .zip(mt.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(gt.len().min(mt.len()));
        println!(
            "{ctx} timeline differs at {first}: golden {:?} mine {:?}",
            &gt[first.saturating_sub(2)..(first + 3).min(gt.len())],
            &mt[first.saturating_sub(2)..(first + 3).min(mt.len())]
        );
    }
}

fn run_example(
    corpus: &Path,
    golden_dir: &str,
    name: &str,
    vnop: bool,
    t: &mut Tally,
    show: usize,
) {
    let folder = corpus.join(golden_dir);
    let plain = folder.join(format!("{name}.json"));
    let gpath = if plain.is_file() {
        plain
    } else {
        folder.join(format!("{name}.json.gz"))
    };
    let golden: Value = serde_json::from_slice(&read_golden(&gpath)).unwrap();
    let example = corpus.join(name);
    let mut isa = JsonIsa::load(&example, vnop);
    let mut shown = 0;
    let mut golden = golden;
    // `_rsvd` (bits that carry 0.3.0 fields) is not compared.
    for se in golden["per_se"].as_array_mut().unwrap() {
        for cb in se["callbacks"].as_array_mut().unwrap() {
            if cb[0] == "WAVE" {
                for key in ["_rsvd1", "_rsvd2", "_rsvd3"] {
                    cb[2][0][key] = Value::from(0);
                }
            }
            if cb[0] == "OCCUPANCY" {
                for row in cb[2].as_array_mut().unwrap() {
                    row[8] = Value::from(0);
                }
            }
        }
    }
    for se in golden["per_se"].as_array().unwrap() {
        let file = se["input"][0].as_str().unwrap();
        let trace = std::fs::read(example.join(file)).unwrap();
        let mine = decode(&trace, &mut isa);
        let gold: Vec<(String, Value)> = se["callbacks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let kind = c[0].as_str().unwrap().to_owned();
                // INFO compares by code, the record kinds `to_json` counts by their row count
                // (golden_check.py compares every field of those).
                let payload = match kind.as_str() {
                    "INFO" => serde_json::json!([c[2][0][0]]),
                    "SHADERDATA" | "INST_OTHER_SIMD" | "PERFEVENT" => c[1].clone(),
                    _ => c[2].clone(),
                };
                (kind, payload)
            })
            .collect();
        t.ses += 1;
        let seq = |v: &[(String, Value)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        if gold == mine {
            t.ses_exact += 1;
        } else if seq(&gold) != seq(&mine) && shown < show {
            shown += 1;
            println!(
                "{name}/{file}: callback sequence golden {:?}\n   mine {:?}",
                seq(&gold),
                seq(&mine)
            );
        }
        let (gw, mw): (Vec<_>, Vec<_>) = (
            gold.iter()
                .filter(|(k, _)| k == "WAVE")
                .map(|(_, v)| &v[0])
                .collect(),
            mine.iter()
                .filter(|(k, _)| k == "WAVE")
                .map(|(_, v)| &v[0])
                .collect(),
        );
        for (i, g) in gw.iter().enumerate() {
            let ctx = format!(
                "{name}/{file} wave {i} (simd {} slot {})",
                g["simd"], g["wave_id"]
            );
            compare_wave(
                g,
                mw.get(i).copied().unwrap_or(&Value::Null),
                t,
                &mut shown,
                show,
                &ctx,
                &isa,
            );
        }
        let occ = |v: &[(String, Value)]| {
            v.iter()
                .filter(|(k, _)| k == "OCCUPANCY")
                .flat_map(|(_, r)| r.as_array().unwrap().clone())
                .collect::<Vec<_>>()
        };
        let (go, mo) = (occ(&gold), occ(&mine));
        t.occupancy += go.len();
        t.occupancy_exact += go.iter().zip(mo.iter()).filter(|(a, b)| a == b).count();
        if go != mo && shown < show {
            shown += 1;
            let first = go.iter().zip(mo.iter()).position(|(a, b)| a != b);
            println!(
                "{name}/{file}: occupancy {} vs {} rows, first diff {first:?}: {:?} vs {:?}",
                go.len(),
                mo.len(),
                first.map(|i| &go[i]),
                first.and_then(|i| mo.get(i))
            );
        }
    }
}

fn report(label: &str, t: &Tally) {
    let pct = |a: usize, b: usize| {
        if b == 0 {
            100.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "{label}: SE exact {}/{}, occupancy {}/{}, waves exact {}/{}, timelines {}/{}, insts exact {}/{} ({:.2}%), \
         cat {:.2}% stall {:.2}% dur {:.2}% time {:.2}% pc {:.2}%",
        t.ses_exact, t.ses, t.occupancy_exact, t.occupancy, t.waves_exact, t.waves, t.timelines_exact, t.waves,
        t.insts_exact, t.insts, pct(t.insts_exact, t.insts), pct(t.fields[0], t.insts), pct(t.fields[1], t.insts),
        pct(t.fields[2], t.insts), pct(t.fields[3], t.insts), pct(t.fields[4], t.insts)
    );
}

/// The gfx9 examples (`<arch>/<name>`) that have a golden in `golden_dir`.
fn examples(corpus: &Path, golden_dir: &str) -> Vec<String> {
    let filter = std::env::var("GFX9_EXAMPLE").unwrap_or_default();
    let mut names = Vec::new();
    for arch in ["gfx90a", "gfx942", "gfx950"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(golden_dir).join(arch)) else {
            continue;
        };
        for entry in entries {
            let file = entry.unwrap().file_name().into_string().unwrap();
            let name = format!("{arch}/{}", file.split(".json").next().unwrap());
            if name.contains(&filter) && corpus.join(&name).is_dir() {
                names.push(name);
            }
        }
    }
    names.sort();
    names
}

fn show() -> usize {
    std::env::var("GFX9_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Every gfx9 example, with its real text and (tinygrad examples) with `v_nop` text, must match
/// exactly unless `tests/known_differences.txt` lists it.
#[test]
fn gfx9_examples_match_the_goldens() {
    let Some(corpus) = corpus() else { return };
    for (dir, check, vnop) in [("golden", "real", false), ("golden_vnop", "vnop", true)] {
        let mut t = Tally::default();
        let names = examples(&corpus, dir);
        let mut differing = Vec::new();
        for name in &names {
            let (ses, exact) = (t.ses, t.ses_exact);
            run_example(&corpus, dir, name, vnop, &mut t, show());
            if t.ses - ses != t.ses_exact - exact {
                differing.push(name.clone());
            }
        }
        report(dir, &t);
        assert!(t.ses > 0, "{dir}: no example was compared");
        hold_to_known_differences(check, &names, &differing);
    }
}

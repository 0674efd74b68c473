//! Decodes the RDNA examples of the shared corpus (`../shared/corpus`) and compares every record
//! with the reference decoder's golden output, plus structural invariants of the decoded waves.
//! The corpus is found as `tests/common/corpus.rs` says.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::{Inst, Pc, WaveState};
use rocprof_trace_decoder::sink::check::Checked;
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};
use serde_json::{json, Value};

#[path = "common/corpus.rs"]
mod corpus_folder;
use corpus_folder::{corpus, hold_to_known_differences, read_golden};

/// ISA answers from an example's `code_object_*.isa.json`, as the goldens were made.
struct StoredIsa {
    lines: HashMap<u64, (String, u64)>,
    vnop: bool,
}

impl StoredIsa {
    fn load(example: &Path, vnop: bool) -> Self {
        let meta: Value = read_json(&example.join("meta.json"));
        let mut lines = HashMap::new();
        for co in meta["code_objects"].as_array().unwrap() {
            let file = co["file"]
                .as_str()
                .unwrap()
                .trim_end_matches(".elf")
                .to_string()
                + ".isa.json";
            let isa: Value = read_json(&example.join(file));
            let base = co["load_base"].as_u64().unwrap();
            for row in isa["instructions"].as_array().unwrap() {
                let (vaddr, size, text) = (
                    row[0].as_u64().unwrap(),
                    row[1].as_u64().unwrap(),
                    row[2].as_str().unwrap(),
                );
                lines.insert(base + vaddr, (text.to_string(), size));
            }
        }
        StoredIsa { lines, vnop }
    }
}

impl IsaProvider for StoredIsa {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        let (t, size) = self
            .lines
            .get(&pc.address)
            .ok_or(IsaError::UnknownAddress)?;
        text.clear();
        if self.vnop {
            text.extend_from_slice(b"v_nop");
            return Ok(if t.starts_with("s_endpgm") { 0 } else { *size });
        }
        text.extend_from_slice(t.as_bytes());
        Ok(*size)
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&read_golden(path)).unwrap()
}

/// One callback in the golden file's notation (0.3.0-only records and fields left out).
fn to_golden(record: Record<'_>) -> Option<Value> {
    Some(match record {
        Record::Gfxip(n) => json!(["GFXIP", 0, {"pointer_value": n}]),
        Record::Occupancy(rows) => json!([
            "OCCUPANCY",
            rows.len(),
            rows.iter()
                .map(|o| json!([
                    o.pc.address,
                    o.pc.code_object_id,
                    o.time,
                    o.reserved,
                    o.cu,
                    o.simd,
                    o.wave_id,
                    o.bits & 1
                ]))
                .collect::<Vec<_>>()
        ]),
        Record::Wave(w) => {
            // SAFETY: the arrays are valid for the duration of the callback, with these sizes.
            let timeline: &[WaveState] = if w.timeline_array.is_null() {
                &[]
            } else {
                unsafe { std::slice::from_raw_parts(w.timeline_array, w.timeline_size as usize) }
            };
            let insts: &[Inst] = if w.instructions_array.is_null() {
                &[]
            } else {
                unsafe {
                    std::slice::from_raw_parts(w.instructions_array, w.instructions_size as usize)
                }
            };
            json!(["WAVE", 1, [{
                "cu": w.cu, "simd": w.simd, "wave_id": w.wave_id, "contexts": w.contexts,
                "begin_time": w.begin_time, "end_time": w.end_time,
                "timeline_size": w.timeline_size, "instructions_size": w.instructions_size,
                "timeline_array_null": w.timeline_array.is_null(),
                "instructions_array_null": w.instructions_array.is_null(),
                "timeline": timeline.iter().map(|s| json!([s.kind, s.duration])).collect::<Vec<_>>(),
                "instructions": insts.iter()
                    .map(|i| json!([i.category(), i.stall(), i.duration, i.time, i.pc.address, i.pc.code_object_id]))
                    .collect::<Vec<_>>(),
            }]])
        }
        Record::Realtime(rows) => json!([
            "REALTIME",
            rows.len(),
            rows.iter()
                .map(|r| json!([r.shader_clock, r.realtime_clock, r.reserved]))
                .collect::<Vec<_>>()
        ]),
        Record::InstOtherSimd(rows) => json!([
            "INST_OTHER_SIMD",
            rows.len(),
            rows.iter()
                .map(|r| json!([r.size, r.time, r.cycles, r.wgp, r.category]))
                .collect::<Vec<_>>()
        ]),
        Record::ShaderData(rows) => json!([
            "SHADERDATA",
            rows.len(),
            rows.iter()
                .map(|r| json!([r.time, r.value, r.cu, r.simd, r.wave_id, r.flags, r.reserved]))
                .collect::<Vec<_>>()
        ]),
        Record::Info(code) => json!(["INFO", 1, [[code as u32]]]),
        Record::RtFrequency(hz) => json!(["RT_FREQUENCY", 1, [hz]]),
        Record::PerfEvent(_) => json!(["PERFEVENT"]),
        Record::Event(_) | Record::Dispatch(_) | Record::Marker(_) => return None,
    })
}

/// The golden callbacks of one SE with the fields v0.1.6 reserved stripped.
fn golden_callbacks(se: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for cb in se["callbacks"].as_array().unwrap() {
        let mut cb = cb.clone();
        match cb[0].as_str().unwrap() {
            "WAVE" => {
                for w in cb[2].as_array_mut().unwrap() {
                    let w = w.as_object_mut().unwrap();
                    for k in ["_rsvd1", "_rsvd2", "_rsvd3"] {
                        w.remove(k);
                    }
                }
            }
            "OCCUPANCY" => {
                for row in cb[2].as_array_mut().unwrap() {
                    row.as_array_mut().unwrap().truncate(8);
                }
            }
            "INFO" => {
                for row in cb[2].as_array_mut().unwrap() {
                    row.as_array_mut().unwrap().truncate(1);
                }
            }
            _ => {}
        }
        out.push(cb);
    }
    out
}

fn decode(data: &[u8], isa: &mut StoredIsa) -> Vec<Value> {
    let mut out = Vec::new();
    let mut sink = |r: Record<'_>| {
        if let Some(v) = to_golden(r) {
            out.push(v);
        }
        0
    };
    let mut sink = Checked(&mut sink);
    let emitter = Emitter::new(&mut sink, Filter::default());
    let mut session = Session::new(emitter, isa);
    session.decode_buffer(data).expect("decodes");
    drop(session);
    out
}

/// First difference between two callback lists, described.
fn first_difference(got: &[Value], golden: &[Value]) -> Option<String> {
    let kinds = |v: &[Value]| {
        v.iter()
            .map(|c| format!("{}:{}", c[0], c[1]))
            .collect::<Vec<_>>()
    };
    if kinds(got) != kinds(golden) {
        return Some(format!(
            "sequence {:?} != golden {:?}",
            kinds(got),
            kinds(golden)
        ));
    }
    for (k, (g, e)) in got.iter().zip(golden).enumerate() {
        if g == e {
            continue;
        }
        if g[0] == "WAVE" {
            let (g, e) = (&g[2][0], &e[2][0]);
            for key in e.as_object().unwrap().keys() {
                if g[key] != e[key] {
                    if key == "instructions" || key == "timeline" {
                        let (ga, ea) = (g[key].as_array().unwrap(), e[key].as_array().unwrap());
                        let j = (0..ga.len().max(ea.len()))
                            .find(|&j| ga.get(j) != ea.get(j))
                            .unwrap();
                        return Some(format!(
                            "callback {k} WAVE {key}[{j}]: got {:?} golden {:?}",
                            ga.get(j),
                            ea.get(j)
                        ));
                    }
                    return Some(format!(
                        "callback {k} WAVE {key}: got {} golden {}",
                        g[key], e[key]
                    ));
                }
            }
        }
        let (ga, ea) = (g[2].as_array().unwrap(), e[2].as_array().unwrap());
        let j = (0..ga.len().max(ea.len()))
            .find(|&j| ga.get(j) != ea.get(j))
            .unwrap_or(0);
        return Some(format!(
            "callback {k} {} row {j}: got {:?} golden {:?}",
            g[0],
            ga.get(j),
            ea.get(j)
        ));
    }
    None
}

fn check_arch(arch: &str, variant: &str) {
    let Some(corpus) = corpus() else { return };
    let golden_dir = corpus
        .join(if variant == "vnop" {
            "golden_vnop"
        } else {
            "golden"
        })
        .join(arch);
    let mut names: Vec<_> = std::fs::read_dir(&golden_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut failures = Vec::new();
    let mut compared = Vec::new();
    for golden_path in names {
        let golden = read_json(&golden_path);
        let name = golden["example"].as_str().unwrap().to_owned();
        let example = corpus.join(&name);
        let mut isa = StoredIsa::load(&example, variant == "vnop");
        for se in golden["per_se"].as_array().unwrap() {
            let file = se["input"][0].as_str().unwrap();
            let data = std::fs::read(example.join(file)).unwrap();
            let got = decode(&data, &mut isa);
            if let Some(diff) = first_difference(&got, &golden_callbacks(se)) {
                failures.push(format!("{name} {file}: {diff}"));
            }
        }
        compared.push(name);
    }
    assert!(
        !compared.is_empty(),
        "no {arch} {variant} golden was compared"
    );
    hold_to_known_differences(variant, &compared, &failures);
}

#[test]
fn gfx1100_matches_the_goldens() {
    check_arch("gfx1100", "real");
}

#[test]
fn gfx1100_matches_the_vnop_goldens() {
    check_arch("gfx1100", "vnop");
}

#[test]
fn gfx1200_matches_the_goldens() {
    check_arch("gfx1200", "real");
}

#[test]
fn gfx1200_matches_the_vnop_goldens() {
    check_arch("gfx1200", "vnop");
}

/// Every WAVE record of a decode, with its instructions.
fn waves(callbacks: &[Value]) -> Vec<&Value> {
    callbacks
        .iter()
        .filter(|c| c[0] == "WAVE")
        .map(|c| &c[2][0])
        .collect()
}

#[test]
fn gfx1200_plus_first_wave_has_the_documented_times() {
    let Some(corpus) = corpus() else { return };
    let example = corpus.join("gfx1200/profile_plus_run_0");
    let data = std::fs::read(example.join("se1.att")).unwrap();
    let got = decode(&data, &mut StoredIsa::load(&example, false));
    let wave = waves(&got)[0];
    let times: Vec<i64> = wave["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i[3].as_i64().unwrap())
        .collect();
    assert_eq!(
        times,
        [
            28178, 28179, 28180, 28181, 28182, 29882, 29883, 29884, 29885, 30966, 30983, 30985,
            30992, 30993
        ]
    );
}

#[test]
fn rdna_decodes_satisfy_the_structural_invariants() {
    let Some(corpus) = corpus() else { return };
    let mut checked = 0;
    for arch in ["gfx1100", "gfx1200"] {
        for entry in std::fs::read_dir(corpus.join(arch)).unwrap() {
            let example = entry.unwrap().path();
            let mut isa = StoredIsa::load(&example, false);
            let mut files: Vec<_> = std::fs::read_dir(&example)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "att"))
                .collect();
            files.sort();
            for file in files {
                let got = decode(&std::fs::read(&file).unwrap(), &mut isa);
                checked += 1;
                let occupancy: Vec<&Value> = got
                    .iter()
                    .filter(|c| c[0] == "OCCUPANCY")
                    .flat_map(|c| c[2].as_array().unwrap())
                    .collect();
                let starts = occupancy.iter().filter(|o| o[7] == 1).count();
                assert_eq!(
                    starts * 2,
                    occupancy.len(),
                    "{}: every wave start has an end",
                    file.display()
                );
                let times: Vec<u64> = occupancy.iter().map(|o| o[2].as_u64().unwrap()).collect();
                assert!(
                    times.windows(2).all(|w| w[0] <= w[1]),
                    "{}: occupancy is time-sorted",
                    file.display()
                );
                for wave in waves(&got) {
                    let (begin, end) = (
                        wave["begin_time"].as_i64().unwrap(),
                        wave["end_time"].as_i64().unwrap(),
                    );
                    let lifetime: i64 = wave["timeline"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s[1].as_i64().unwrap())
                        .sum();
                    assert_eq!(
                        lifetime,
                        end - begin,
                        "{}: the timeline spans the wave",
                        file.display()
                    );
                    let mut last = begin;
                    for inst in wave["instructions"].as_array().unwrap() {
                        let time = inst[3].as_i64().unwrap();
                        assert!(
                            time >= last && time <= end,
                            "{}: instruction times are ordered",
                            file.display()
                        );
                        last = time;
                    }
                }
            }
        }
    }
    assert!(checked > 0, "no RDNA SE file was checked");
}

/// Buffers kept per thread between parse calls (pools, wave builders, ISA line facts) carry no
/// state: an SE buffer decodes the same on a fresh thread and after other decodes on this one.
#[test]
fn decodes_do_not_depend_on_earlier_calls_on_the_thread() {
    let Some(corpus) = corpus() else { return };
    let inputs: Vec<(PathBuf, Vec<u8>)> = [
        "gfx1200/profile_ops_run_0/se1.att",
        "gfx1100/profile_gemm_run_0/se0.att",
        "gfx1200/profile_gemm_run_1/se0.att",
        "gfx950/profile_gemm_run_0/se0.att",
    ]
    .iter()
    .map(|file| {
        let path = corpus.join(file);
        let data = std::fs::read(&path).unwrap();
        (path.parent().unwrap().to_path_buf(), data)
    })
    .collect();
    let decode_all = |order: &mut dyn Iterator<Item = usize>| {
        let mut out = vec![Vec::new(); inputs.len()];
        for k in order {
            let (example, data) = &inputs[k];
            out[k] = decode(data, &mut StoredIsa::load(example, false));
        }
        out
    };
    let fresh: Vec<Vec<Value>> = (0..inputs.len())
        .map(|k| {
            std::thread::scope(|s| s.spawn(|| decode_all(&mut (k..=k))).join().unwrap())[k].clone()
        })
        .collect();
    let forward = decode_all(&mut (0..inputs.len()));
    let backward = decode_all(&mut (0..inputs.len()).rev());
    for (k, (example, _)) in inputs.iter().enumerate() {
        assert!(
            !fresh[k].is_empty(),
            "{} decodes to records",
            example.display()
        );
        assert_eq!(
            forward[k],
            fresh[k],
            "{} after earlier decodes",
            example.display()
        );
        assert_eq!(
            backward[k],
            fresh[k],
            "{} after later ones",
            example.display()
        );
    }
}

//! Built-in disassembly over the corpus code objects: the answers must be the ISA-callback
//! answers recorded in `code_object_0.isa.json` (llvm-objdump 19), and bad ELFs must fail
//! cleanly. Tests that need LLVM skip (saying so) when no libLLVM back-end is installed.

use std::fs;
use std::path::{Path, PathBuf};

use rocprof_trace_decoder::isa::backend::{self, Backend, BackendKind};
use rocprof_trace_decoder::isa::classify::{classify, Substrings, TextClass};
use rocprof_trace_decoder::isa::codeobj::{CodeObject, CodeObjectError, CodeObjectTable};
use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::Pc;
use serde_json::Value;

#[path = "common/corpus.rs"]
mod corpus_folder;
use corpus_folder::{corpus, missing};

/// Big enough to span every corpus code object as loaded in memory.
const LOAD_SIZE: u64 = 1 << 20;
/// The load id the tests give code objects for marker-style `{id, vaddr}` queries.
const LOAD_ID: u64 = 7;

/// Example directories of `arch` that ship a code object and its ISA answers.
fn examples(corpus: &Path, arch: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(corpus.join(arch))
        .expect("corpus directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|dir| dir.join("code_object_0.elf").exists())
        .filter(|dir| dir.join("code_object_0.isa.json").exists())
        .collect();
    found.sort();
    found
}

struct Expected {
    arch: String,
    load_base: u64,
    /// (vaddr, size, text)
    instructions: Vec<(u64, u64, String)>,
}

fn expected(dir: &Path) -> Expected {
    let json: Value =
        serde_json::from_slice(&fs::read(dir.join("code_object_0.isa.json")).expect("isa json"))
            .expect("valid json");
    let instructions = json["instructions"]
        .as_array()
        .expect("instructions")
        .iter()
        .map(|row| {
            (
                row[0].as_u64().expect("vaddr"),
                row[1].as_u64().expect("size"),
                row[2].as_str().expect("text").to_owned(),
            )
        })
        .collect();
    Expected {
        arch: json["arch"].as_str().expect("arch").to_owned(),
        load_base: json["load_base"].as_u64().unwrap_or(0),
        instructions,
    }
}

/// The libLLVM back-end alone (the corpus text is LLVM's); without it the test fails unless
/// missing tools are allowed (`tests/common/corpus.rs`).
fn llvm_only(test: &str) -> Option<&'static [Backend]> {
    let backends = backend::system();
    match backends.iter().position(|b| b.kind() == BackendKind::Llvm) {
        Some(i) => Some(std::slice::from_ref(&backends[i])),
        None => missing(&format!(
            "{test}: the libLLVM back-end (apt-get install llvm-19)"
        )),
    }
}

/// A table holding `dir`'s code object at its load base, with id [`LOAD_ID`].
fn table_for(dir: &Path, backends: &'static [Backend], expected: &Expected) -> CodeObjectTable {
    let mut table = CodeObjectTable::with_backends(backends);
    // tinygrad's hand-built ELFs name no processor: the corpus says which one ran them.
    table
        .set_fallback_target(&expected.arch)
        .expect("known processor");
    let elf = fs::read(dir.join("code_object_0.elf")).expect("elf");
    table
        .load(LOAD_ID, expected.load_base, LOAD_SIZE, &elf)
        .expect("loads");
    table
}

/// An instruction whose answer is not the recorded one: its vaddr, recorded size and text, and
/// the answer (size and text).
type Mismatch = (u64, u64, String, Result<(u64, String), IsaError>);

/// Asks `table` for every instruction of `expected`, by runtime address and by `{id, vaddr}`;
/// returns those whose answer differs, after checking that both ways agree.
fn mismatches(table: &mut CodeObjectTable, expected: &Expected) -> Vec<Mismatch> {
    let mut text = Vec::new();
    let mut wrong = Vec::new();
    for &(vaddr, size, ref want) in &expected.instructions {
        let by_runtime = table.disassemble(Pc::new(expected.load_base + vaddr, 0), &mut text);
        let runtime_text = String::from_utf8_lossy(&text).into_owned();
        let by_id = table.disassemble(Pc::new(vaddr, LOAD_ID), &mut text);
        assert_eq!(
            by_runtime, by_id,
            "{vaddr:#x}: both addressings give one answer"
        );
        assert_eq!(runtime_text, String::from_utf8_lossy(&text));
        if by_runtime != Ok(size) || runtime_text != *want {
            let got = by_runtime.map(|got| (got, runtime_text));
            wrong.push((vaddr, size, want.clone(), got));
        }
    }
    wrong
}

/// How an example's recorded ISA text was made, read from its `source`: the LLVM major and
/// processor of the `llvm-objdump-<major> ... --mcpu=<processor>` run, and how many
/// instructions another disassembler answered where that LLVM printed `.long`.
struct TextSource {
    llvm_major: u32,
    mcpu: String,
    undecodable_by_llvm: usize,
}

impl TextSource {
    /// `None` for text that no llvm-objdump run made (rocprofv3's `code.json`, rebuilt tables).
    fn of(dir: &Path) -> Option<TextSource> {
        let json: Value =
            serde_json::from_slice(&fs::read(dir.join("code_object_0.isa.json")).unwrap()).unwrap();
        let source = json["source"].as_str()?;
        let major = source.strip_prefix("llvm-objdump-")?;
        let llvm_major = major[..major.find(|c: char| !c.is_ascii_digit())?]
            .parse()
            .ok()?;
        let mcpu = source
            .split_whitespace()
            .find_map(|word| word.strip_prefix("--mcpu="))?
            .to_owned();
        let undecodable_by_llvm = source
            .split(" instructions where llvm printed .long")
            .next()
            .filter(|head| head.len() < source.len())
            .and_then(|head| head.rsplit(' ').next())
            .map_or(0, |count| count.parse().expect("a count of instructions"));
        Some(TextSource {
            llvm_major,
            mcpu,
            undecodable_by_llvm,
        })
    }
}

/// The libLLVM back-end of one major version (the corpus text names the llvm-objdump it came
/// from); without it the test fails unless missing tools are allowed (`tests/common/corpus.rs`).
fn llvm_of_major(major: u32, test: &str) -> Option<&'static [Backend]> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Loaded = Mutex<HashMap<u32, Option<&'static [Backend]>>>;
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
    let found = *loaded.entry(major).or_insert_with(|| {
        Backend::llvm(major).map(|backend| &*Box::leak(Box::new([backend])) as &'static [Backend])
    });
    found.or_else(|| {
        missing(&format!(
            "{test}: libLLVM {major} (apt-get install llvm-{major})"
        ))
    })
}

/// The class the stitcher gives a line of text.
fn class_of(text: &str) -> TextClass {
    classify(text.as_bytes(), Substrings::find(text.as_bytes()))
}

/// Every corpus code object whose recorded text llvm-objdump made for the processor it runs
/// on: built-in disassembly through that same LLVM gives the same text and size for every
/// instruction, except exactly as many as the source says that LLVM printed as `.long`
/// (answered by tinygrad's disassembler). Those the built-in tables answer past LLVM: the
/// recorded size, and a mnemonic (no operands) of the class the recorded text has.
#[test]
fn corpus_answers_equal_the_recorded_isa_callback() {
    let test = "corpus_answers_equal_the_recorded_isa_callback";
    let Some(corpus) = corpus() else {
        return;
    };
    let mut checked = 0;
    for arch in ["gfx1100", "gfx1200", "gfx942", "gfx950"] {
        if !corpus.join(arch).is_dir() {
            continue;
        }
        for dir in examples(&corpus, arch) {
            let Some(source) = TextSource::of(&dir) else {
                continue;
            };
            let expected = expected(&dir);
            if source.mcpu != expected.arch {
                continue; // text made for another processor than the one that ran it
            }
            let Some(backends) = llvm_of_major(source.llvm_major, test) else {
                return;
            };
            let mut table = table_for(&dir, backends, &expected);
            let wrong = mismatches(&mut table, &expected);
            for (vaddr, size, want, got) in &wrong {
                let mnemonic = want.split(' ').next().unwrap_or_default();
                let answered = got.as_ref().is_ok_and(|(got_size, text)| {
                    got_size == size
                        && !text.contains(' ')
                        && text.starts_with(mnemonic)
                        && class_of(text) == class_of(want)
                });
                assert!(
                    answered,
                    "{}: {vaddr:#x}: {want:?} ({size} bytes): {got:?}",
                    dir.display()
                );
            }
            assert_eq!(
                wrong.len(),
                source.undecodable_by_llvm,
                "{}: instructions LLVM {} cannot decode",
                dir.display(),
                source.llvm_major
            );
            checked += expected.instructions.len();
        }
    }
    assert!(checked > 2500, "only {checked} instructions checked");
}

#[test]
fn a_target_llvm_does_not_know_is_refused_at_load() {
    let Some(corpus) = corpus() else {
        return;
    };
    let Some(backends) = llvm_only("a_target_llvm_does_not_know_is_refused_at_load") else {
        return;
    };
    if backends[0].supports("gfx950") {
        eprintln!(
            "a_target_llvm_does_not_know_is_refused_at_load: skipped, this LLVM knows gfx950"
        );
        return;
    }
    let elf = fs::read(corpus.join("gfx950/profile_gemm_run_0/code_object_0.elf")).unwrap();
    let mut table = CodeObjectTable::with_backends(backends);
    let error = table.load(1, 0, LOAD_SIZE, &elf).unwrap_err();
    assert_eq!(error, CodeObjectError::UnsupportedTarget("gfx950"));
    assert!(error.is_missing_disassembler());
}

#[test]
fn no_backend_means_no_loading() {
    let Some(corpus) = corpus() else {
        return;
    };
    let elf = fs::read(corpus.join("gfx1100/profile_gemm_run_0/code_object_0.elf")).unwrap();
    let mut table = CodeObjectTable::with_backends(&[]);
    let error = table.load(1, 0, LOAD_SIZE, &elf).unwrap_err();
    assert_eq!(error, CodeObjectError::NoBackend);
    assert!(error.is_missing_disassembler());
}

#[test]
fn addresses_outside_every_code_object_are_unknown() {
    let Some(corpus) = corpus() else {
        return;
    };
    let Some(backends) = llvm_only("addresses_outside_every_code_object_are_unknown") else {
        return;
    };
    let dir = corpus.join("gfx1100/profile_gemm_run_0");
    let expected = expected(&dir);
    let mut table = table_for(&dir, backends, &expected);
    let mut text = Vec::new();
    let first = expected.instructions[0].0;
    for pc in [
        Pc::new(expected.load_base - 4, 0),
        Pc::new(expected.load_base + LOAD_SIZE, 0),
        Pc::new(first, 0),
        Pc::new(first, LOAD_ID + 1),
        Pc::new(0, LOAD_ID),
        Pc::new(u64::MAX, LOAD_ID),
        Pc::new(u64::MAX, 0),
    ] {
        assert_eq!(
            table.disassemble(pc, &mut text),
            Err(IsaError::UnknownAddress),
            "{pc:?}"
        );
    }
    assert!(table.unload(LOAD_ID));
    assert!(!table.unload(LOAD_ID));
    assert_eq!(
        table.disassemble(Pc::new(first, LOAD_ID), &mut text),
        Err(IsaError::UnknownAddress),
        "unloaded objects answer nothing"
    );
}

#[test]
fn hand_built_elfs_without_a_target_need_one() {
    let Some(corpus) = corpus() else {
        return;
    };
    let Some(backends) = llvm_only("hand_built_elfs_without_a_target_need_one") else {
        return;
    };
    let dir = corpus.join("gfx1100/profile_sync_run_0_k0");
    let elf = fs::read(dir.join("code_object_0.elf")).unwrap();
    let object = CodeObject::parse(1, 0, LOAD_SIZE, &elf).expect("hand-built ELF parses");
    assert_eq!(object.target, None);
    let mut table = CodeObjectTable::with_backends(backends);
    table.load(1, 0, LOAD_SIZE, &elf).expect("loads");
    let vaddr = expected(&dir).instructions[0].0;
    let mut text = Vec::new();
    assert_eq!(
        table.disassemble(Pc::new(vaddr, 1), &mut text),
        Err(IsaError::NoDisassembler)
    );
}

#[test]
fn symbols_and_source_lines() {
    let Some(corpus) = corpus() else {
        return;
    };
    let gemm = fs::read(corpus.join("gfx1100/profile_gemm_run_0/code_object_0.elf")).unwrap();
    let object = CodeObject::parse(1, 0, LOAD_SIZE, &gemm).unwrap();
    assert_eq!(object.target, Some("gfx1100"));
    let kernel = object.symbol_at(0x1700 + 0x20).expect("kernel symbol");
    assert_eq!(
        (kernel.name.as_str(), kernel.vaddr),
        ("r_32_32_16_2", 0x1700)
    );
    assert_eq!(
        object.line_at(0x1700),
        None,
        "tinygrad kernels carry no DWARF"
    );

    // Positions as llvm-dwarfdump-19 --debug-line prints them for this code object.
    let dir = corpus.join("gfx950/aiter_skinny_M128_att_hack0");
    let aiter = CodeObject::parse(
        4,
        0,
        LOAD_SIZE,
        &fs::read(dir.join("code_object_0.elf")).unwrap(),
    )
    .unwrap();
    assert_eq!(aiter.target, Some("gfx950"));
    let line = aiter
        .line_at(0x1700)
        .expect("line of the first instruction");
    assert_eq!(
        (line.file, line.line),
        ("/app/aiter/aiter/ops/triton/gemm_afp4wfp4.py", 14)
    );
    let line = aiter.line_at(0x180c).expect("line inside a row");
    assert_eq!(
        (line.file, line.line),
        ("/app/OAI-triton/python/triton/language/standard.py", 40)
    );
    assert_eq!(
        aiter.symbol_at(0x1700).map(|s| s.name.as_str()),
        Some("_gemm_afp4_wfp4_kernel")
    );
}

/// Different malformations of a real code object: each must be an error, never a panic.
#[test]
fn malformed_elfs_are_errors() {
    let Some(corpus) = corpus() else {
        return;
    };
    let elf = fs::read(corpus.join("gfx1100/profile_gemm_run_0/code_object_0.elf")).unwrap();
    let parse = |bytes: &[u8]| CodeObject::parse(1, 0, LOAD_SIZE, bytes);
    assert!(parse(&elf).is_ok());
    assert_eq!(parse(&[]).unwrap_err(), CodeObjectError::NotElf);
    assert_eq!(parse(&elf[..63]).unwrap_err(), CodeObjectError::NotElf);
    assert_eq!(parse(&[0u8; 64]).unwrap_err(), CodeObjectError::NoCode);
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    assert_eq!(parse(&garbage).unwrap_err(), CodeObjectError::NotElf);
    for length in [64, 100, 0x700, 0x800, 0xe90, elf.len() - 1] {
        assert!(
            parse(&elf[..length]).is_err(),
            "truncated to {length} bytes"
        );
    }
    let patched = |at: usize, bytes: &[u8]| {
        let mut copy = elf.clone();
        copy[at..at + bytes.len()].copy_from_slice(bytes);
        copy
    };
    // e_shoff, e_shnum, e_phoff beyond the file; .text's sh_offset and sh_size huge.
    assert!(parse(&patched(0x28, &u64::MAX.to_le_bytes())).is_err());
    assert!(parse(&patched(0x3c, &u16::MAX.to_le_bytes())).is_err());
    assert!(parse(&patched(0x20, &(u64::MAX - 8).to_le_bytes())).is_err());
    let text_header = 0xe90 + 7 * 64;
    assert!(parse(&patched(text_header + 0x18, &u64::MAX.to_le_bytes())).is_err());
    assert!(parse(&patched(text_header + 0x20, &(1u64 << 40).to_le_bytes())).is_err());
    assert_eq!(
        parse(&patched(0x12, &62u16.to_le_bytes())).unwrap_err(),
        CodeObjectError::NotAmdgpu(62)
    );
    assert_eq!(
        parse(&patched(0x30, &[0x27])).unwrap_err(),
        CodeObjectError::UnknownProcessor(0x27)
    );
}

/// Every single-byte corruption of the headers parses or fails, and disassembling every address
/// of what parses never panics.
#[test]
fn corrupted_headers_never_panic() {
    let Some(corpus) = corpus() else {
        return;
    };
    let elf = fs::read(corpus.join("gfx1100/profile_sync_run_0_k0/code_object_0.elf")).unwrap();
    let backends = llvm_only("corrupted_headers_never_panic (disassembly part)").unwrap_or(&[]);
    let header_bytes = (0..64).chain(0x497..elf.len());
    let mut text = Vec::new();
    for at in header_bytes {
        for value in [0x00, 0x01, 0x7f, 0x80, 0xff] {
            let mut copy = elf.clone();
            copy[at] = value;
            let Ok(object) = CodeObject::parse(1, 0, LOAD_SIZE, &copy) else {
                continue;
            };
            assert!(object
                .code_at(0x100)
                .is_none_or(|code| code.len() <= copy.len()));
            if backends.is_empty() || at % 7 != 0 {
                continue; // disassembling is slow: a sample of the corruptions suffices
            }
            let mut table = CodeObjectTable::with_backends(backends);
            table.set_fallback_target("gfx1100").unwrap();
            if table.load(1, 0, LOAD_SIZE, &copy).is_ok() {
                for address in (0..0x500).step_by(4) {
                    let _ = table.disassemble(Pc::new(address, 1), &mut text);
                }
            }
        }
    }
}

/// When COMGR and libLLVM are both installed, they give the same answers for a target both
/// know. The gfx950 tinygrad gemm is read as gfx90a code (its ELF header made target-less):
/// both back-ends must then agree wherever either decodes.
#[test]
fn comgr_and_llvm_agree() {
    let Some(corpus) = corpus() else {
        return;
    };
    let backends = backend::system();
    let pick = |kind| {
        backends
            .iter()
            .position(|b| b.kind() == kind && b.supports("gfx90a"))
    };
    let (Some(comgr), Some(llvm)) = (pick(BackendKind::Comgr), pick(BackendKind::Llvm)) else {
        missing::<()>("comgr_and_llvm_agree: COMGR and libLLVM back-ends that know gfx90a");
        return;
    };
    let dir = corpus.join("gfx950/profile_gemm_run_0");
    let mut elf = fs::read(dir.join("code_object_0.elf")).unwrap();
    elf[0x12..0x14].copy_from_slice(&[0, 0]); // e_machine 0: the fallback target decides
    let expected = expected(&dir);
    let mut tables = [comgr, llvm].map(|i| {
        let mut table = CodeObjectTable::with_backends(std::slice::from_ref(&backends[i]));
        table.set_fallback_target("gfx90a").unwrap();
        table.load(LOAD_ID, 0, LOAD_SIZE, &elf).unwrap();
        table
    });
    let (mut comgr_text, mut llvm_text) = (Vec::new(), Vec::new());
    let mut agreed = 0;
    for (vaddr, _, _) in &expected.instructions {
        let pc = Pc::new(*vaddr, LOAD_ID);
        let by_comgr = tables[0].disassemble(pc, &mut comgr_text);
        let by_llvm = tables[1].disassemble(pc, &mut llvm_text);
        assert_eq!(by_comgr, by_llvm, "{vaddr:#x}");
        assert_eq!(
            String::from_utf8_lossy(&comgr_text),
            String::from_utf8_lossy(&llvm_text),
            "{vaddr:#x}"
        );
        agreed += usize::from(by_llvm.is_ok());
    }
    assert!(agreed > expected.instructions.len() / 2);
}

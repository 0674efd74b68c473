//! The built-in tables against LLVM itself (the libLLVM 19 and 22 back-ends, which give
//! llvm-objdump's text): size and mnemonic, and a branch's whole text, for every instruction of
//! every corpus code object and for random instructions of every encoding format. Where LLVM
//! rejects the bytes the tables must too, on the corpus; random operands LLVM rejects (bad
//! register fields and the like) are counted, not failed, since the tables key on opcodes.

use std::fs;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rocprof_trace_decoder::isa::backend::{Backend, Disassembler};
use rocprof_trace_decoder::isa::builtin::Tables;
use rocprof_trace_decoder::isa::classify::{classify, Substrings, TextClass};
use serde_json::Value;

#[path = "common/corpus.rs"]
mod corpus_folder;
use corpus_folder::{corpus, missing};

/// The LLVM major each table was measured from (scripts/gen_isa_tables.py).
fn measured_by(target: &str) -> u32 {
    if target == "gfx950" {
        22
    } else {
        19
    }
}

/// Held by each test: two LLVM majors used in turn by two threads crash (their global state).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn llvm(major: u32) -> Option<&'static Backend> {
    static LOADED: [OnceLock<Option<Backend>>; 2] = [OnceLock::new(), OnceLock::new()];
    let backend = LOADED[usize::from(major >= 22)].get_or_init(|| Backend::llvm(major));
    backend
        .as_ref()
        .or_else(|| missing(&format!("libLLVM {major} (apt-get install llvm-{major})")))
}

/// `(size, text)` from a disassembler, or `None`.
fn answer(disassembler: &mut Disassembler, code: &[u8]) -> Option<(usize, String)> {
    let mut text = Vec::new();
    let size = disassembler.decode(code, 0, &mut text)?;
    Some((size, String::from_utf8_lossy(&text).into_owned()))
}

fn builtin(tables: &Tables, code: &[u8]) -> Option<(usize, String)> {
    let mut text = Vec::new();
    let size = tables.decode(code, &mut text)?;
    Some((size, String::from_utf8(text).expect("ascii")))
}

/// Equal when the sizes and mnemonics are, and a branch's text (mnemonic and immediate).
fn same(ours: &Option<(usize, String)>, llvm: &Option<(usize, String)>) -> bool {
    match (ours, llvm) {
        (None, None) => true,
        (Some((size, text)), Some((llvm_size, llvm_text))) => {
            let mnemonic = llvm_text.split_whitespace().next().unwrap_or("");
            size == llvm_size
                && text.split(' ').next() == Some(mnemonic)
                && (!text.contains(' ') || text == llvm_text)
        }
        _ => false,
    }
}

/// A listed instruction: offset in the text section, size, rocprofv3's (LLVM's) text.
type Listed = (usize, usize, String);

/// Every corpus code object: `(target, text section bytes, its listed instructions)`.
fn corpus_code() -> Vec<(String, Vec<u8>, Vec<Listed>)> {
    let Some(corpus) = corpus() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for arch in fs::read_dir(&corpus).expect("corpus") {
        let Ok(examples) = fs::read_dir(arch.expect("entry").path()) else {
            continue;
        };
        for example in examples {
            let dir = example.expect("entry").path();
            if let Some(code) = code_object(&dir) {
                found.push(code);
            }
        }
    }
    found.sort();
    found
}

fn code_object(dir: &Path) -> Option<(String, Vec<u8>, Vec<Listed>)> {
    let elf = fs::read(dir.join("code_object_0.elf")).ok()?;
    let json: Value =
        serde_json::from_slice(&fs::read(dir.join("code_object_0.isa.json")).ok()?).ok()?;
    let section = &json["text_section"];
    let (vaddr, offset, size) = match (
        section["vaddr"].as_u64(),
        section["file_offset"].as_u64(),
        section["size"].as_u64(),
    ) {
        (Some(vaddr), Some(offset), Some(size)) => (vaddr, offset, size),
        // Older captures name no section: the ELF's `.text`.
        _ => elf_text(&elf)?,
    };
    let text = elf.get(offset as usize..(offset + size) as usize)?.to_vec();
    let offsets = json["instructions"]
        .as_array()?
        .iter()
        .filter_map(|row| Some((row[0].as_u64()?, row[1].as_u64()?, row[2].as_str()?)))
        .filter(|&(a, _, _)| a >= vaddr && a < vaddr + size)
        .map(|(a, size, text)| ((a - vaddr) as usize, size as usize, text.to_owned()))
        .collect();
    Some((json["arch"].as_str()?.to_owned(), text, offsets))
}

/// `(vaddr, file offset, size)` of the `.text` section of a 64-bit little-endian ELF.
fn elf_text(elf: &[u8]) -> Option<(u64, u64, u64)> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(elf.get(at..at + 8)?.try_into().ok()?));
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let table = usize::try_from(u64_at(0x28)?).ok()?;
    let (entry, count) = (usize::from(u16_at(0x3A)?), usize::from(u16_at(0x3C)?));
    let header = |index: usize| table + index * entry;
    let names = usize::try_from(u64_at(header(usize::from(u16_at(0x3E)?)) + 0x18)?).ok()?;
    (0..count).find_map(|index| {
        let at = header(index);
        let name = names + usize::try_from(u32_at(at)?).ok()?;
        (elf.get(name..name + 6)? == b".text\0")
            .then(|| Some((u64_at(at + 0x10)?, u64_at(at + 0x18)?, u64_at(at + 0x20)?)))?
    })
}

/// What [`compare`] found.
#[derive(Default)]
struct Comparison {
    compared: usize,
    /// LLVM decodes the bytes and the tables differ (or do not decode them).
    differ: Vec<String>,
    /// LLVM rejects bytes the tables decode.
    rejected_only: Vec<String>,
    /// Time spent decoding: the tables', LLVM's.
    ours_time: Duration,
    llvm_time: Duration,
}

impl Comparison {
    fn report(&self, what: &str) {
        eprintln!(
            "{what}: {} compared, {} differ, {} rejected by LLVM only",
            self.compared,
            self.differ.len(),
            self.rejected_only.len()
        );
        for example in self.differ.iter().chain(&self.rejected_only).take(8) {
            eprintln!("  {example}");
        }
    }
}

/// Compares the tables of `target` with LLVM `major` over `cases`; `None` without that LLVM.
fn compare<'a>(
    target: &str,
    major: u32,
    cases: impl Iterator<Item = &'a [u8]>,
) -> Option<Comparison> {
    let tables = Tables::of(target).expect("tables");
    let mut disassembler = llvm(major)?.open(target)?;
    let mut found = Comparison::default();
    for code in cases {
        found.compared += 1;
        let start = Instant::now();
        let ours = builtin(tables, code);
        let middle = Instant::now();
        let theirs = answer(&mut disassembler, code);
        found.ours_time += middle - start;
        found.llvm_time += middle.elapsed();
        if same(&ours, &theirs) {
            continue;
        }
        let bytes: Vec<String> = code.iter().take(12).map(|b| format!("{b:02x}")).collect();
        let example = format!(
            "{target} LLVM {major} [{}] ours {ours:?} llvm {theirs:?}",
            bytes.join(" ")
        );
        if theirs.is_none() {
            found.rejected_only.push(example);
        } else {
            found.differ.push(example);
        }
    }
    Some(found)
}

#[test]
fn corpus_code_objects_match_llvm() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let objects = corpus_code();
    let mut failures = Vec::new();
    for major in [19, 22] {
        let mut total = (0, 0, 0);
        let mut times = (Duration::ZERO, Duration::ZERO);
        for (arch, text, listed) in &objects {
            if !Tables::supports(arch) || (arch == "gfx950" && major < 22) {
                continue;
            }
            let cases = listed.iter().map(|&(at, _, _)| &text[at..]);
            let Some(found) = compare(arch, major, cases) else {
                return;
            };
            total.0 += found.compared;
            total.1 += found.differ.len();
            total.2 += found.rejected_only.len();
            times.0 += found.ours_time;
            times.1 += found.llvm_time;
            // Exact against the LLVM the table was measured from; the other is reported.
            let strict = major == measured_by(arch);
            if !found.differ.is_empty() || !found.rejected_only.is_empty() {
                let note = if strict { "" } else { " (reported only)" };
                found.report(&format!("{arch} vs LLVM {major}{note}"));
                if strict {
                    failures.extend(found.differ);
                    failures.extend(found.rejected_only);
                }
            }
        }
        eprintln!(
            "corpus vs LLVM {major}: {} instructions, {} differ, {} rejected by LLVM only; \
             decoding took {:?} (tables) and {:?} (LLVM)",
            total.0, total.1, total.2, times.0, times.1
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The tables against the corpus' own listings (rocprofv3's size and text, from the LLVM of the
/// capture): exact for gfx950, whose table was measured from an LLVM as new, reported otherwise.
#[test]
fn corpus_code_objects_match_their_listing() {
    let mut failures = Vec::new();
    let mut differ = std::collections::BTreeMap::<&str, (usize, usize)>::new();
    let objects = corpus_code();
    for (arch, text, listed) in &objects {
        let Some(tables) = Tables::of(arch) else {
            continue;
        };
        let count = differ.entry(arch).or_default();
        for (at, size, listing) in listed {
            count.0 += 1;
            let ours = builtin(tables, &text[*at..]);
            if same(&ours, &Some((*size, listing.clone()))) {
                continue;
            }
            count.1 += 1;
            if arch == "gfx950" {
                failures.push(format!(
                    "{arch} +{at:#x}: ours {ours:?} listed {size} {listing}"
                ));
            }
        }
    }
    for (arch, (compared, differ)) in &differ {
        eprintln!("{arch} vs its listings: {compared} compared, {differ} differ");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

const RANDOM_PER_PREFIX: usize = 64;

#[test]
fn random_instructions_of_every_format_match_llvm() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // LLVM 19's targets first, then LLVM 22's: one major after the other (see ONE_AT_A_TIME).
    let targets = [
        "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1151", "gfx1200", "gfx950",
    ];
    let mut failures = Vec::new();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u32
    };
    for target in targets {
        let mut cases = Vec::new();
        // Every value of the top byte: every format's identifying bits.
        for top in 0..256u32 {
            for _ in 0..RANDOM_PER_PREFIX {
                let mut code = Vec::new();
                code.extend_from_slice(&(top << 24 | next() >> 8).to_le_bytes());
                for _ in 0..4 {
                    code.extend_from_slice(&next().to_le_bytes());
                }
                // LLVM 22 crashes on some gfx950 SDWA dwords (VOP1/VOP2/VOPC with src0 0xF9).
                let sdwa = top < 0x80 && code[0] == 0xF9 && code[1] & 1 == 0;
                if !(sdwa && measured_by(target) == 22) {
                    cases.push(code);
                }
            }
        }
        let major = measured_by(target);
        let Some(found) = compare(target, major, cases.iter().map(Vec::as_slice)) else {
            return;
        };
        found.report(&format!("{target} vs LLVM {major}, random"));
        failures.extend(found.differ);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Instructions of tinygrad's discover-ops kernels, synthesized from the ISA's encodings: LLVM
/// (the one the tables were measured from) rejects them, as [`Tables::decode`] does, and
/// [`Tables::decode_past_llvm`] gives their size and a mnemonic of the right class.
#[test]
fn what_llvm_rejects_the_tables_answer_past_llvm() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // DS: opcode in bits 18-25; dword 1 holds addr, data0 (v48), data1 (v64), vdst (v32).
    let ds = |op: u32| [0xD800_0000 | op << 18, 0x2040_3000];
    // VOP3: opcode in bits 16-25, vdst v0; dword 1 holds src0 (v16), src1 (v32), src2 (v48).
    let vop3 = |op: u32| [0xD400_0000 | op << 16, 0x04C2_4110];
    // VOP1: opcode in bits 9-16, vdst (v0) in bits 17-24, src0 (v16) in bits 0-8.
    let vop1 = |op: u32| [0x7E00_0000 | op << 9 | 0x110];
    // SOP2: opcode in bits 23-29, sdst, ssrc1 and ssrc0 all vcc_lo (106).
    let sop2 = |op: u32| [0x8000_0000 | op << 23 | 0x6A_6A6A];
    let cases: &[(&str, Vec<u32>, usize, &str, TextClass)] = &[
        // An operand field the opcode does not use is set (data1, src2): LLVM wants it zero.
        ("gfx1100", ds(0x15).into(), 8, "ds_add_f32", TextClass::Lds),
        (
            "gfx1100",
            vop3(0x108).into(),
            8,
            "v_mul_f32_e64",
            TextClass::Valu,
        ),
        ("gfx1200", ds(0x36).into(), 8, "ds_load_b32", TextClass::Lds),
        // Opcodes LLVM does not know: gfx11's SALU floats, v_swap_b16, VOP3 forms of VOP1.
        (
            "gfx1100",
            sop2(0x40).into(),
            4,
            "s_add_f32",
            TextClass::Salu,
        ),
        (
            "gfx1100",
            vop1(0x66).into(),
            4,
            "v_swap_b16_e32",
            TextClass::Valu,
        ),
        (
            "gfx1200",
            vop1(0x66).into(),
            4,
            "v_swap_b16_e32",
            TextClass::Valu,
        ),
        (
            "gfx1100",
            vop3(0x182).into(),
            8,
            "v_readfirstlane_b32_e64",
            TextClass::Valu,
        ),
        (
            "gfx1200",
            vop3(0x19C).into(),
            8,
            "v_mov_b16_e64",
            TextClass::Valu,
        ),
        (
            "gfx1200",
            ds(0xCD).into(),
            8,
            "ds_bpermute_fi_b32",
            TextClass::Lds,
        ),
        (
            "gfx1200",
            ds(0xE0).into(),
            8,
            "ds_bvh_stack_push4_pop1_rtn_b32",
            TextClass::Lds,
        ),
    ];
    for (target, words, size, mnemonic, class) in cases {
        let mut code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        code.extend_from_slice(&[0; 8]);
        let tables = Tables::of(target).expect("tables");
        let case = format!("{target} {words:08x?}");
        assert_eq!(builtin(tables, &code), None, "{case}: as LLVM");
        if let Some(mut llvm) = llvm(measured_by(target)).and_then(|b| b.open(target)) {
            assert_eq!(answer(&mut llvm, &code), None, "{case}: LLVM rejects it");
        }
        let mut text = Vec::new();
        let got = tables.decode_past_llvm(&code, &mut text);
        assert_eq!(got, Some(*size), "{case}");
        assert_eq!(text, mnemonic.as_bytes(), "{case}");
        assert_eq!(classify(&text, Substrings::find(&text)), *class, "{case}");
    }
    // The encoding decides the size: a literal source adds a dword, DPP (src0 250) one more.
    let tables = Tables::of("gfx1100").expect("tables");
    let mut text = Vec::new();
    let literal = [0xA000_6AFFu32, 0x3F80_0000, 0, 0]; // s_add_f32 s0, 1.0, vcc_lo
    let code: Vec<u8> = literal.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(tables.decode_past_llvm(&code, &mut text), Some(8));
    assert_eq!(
        tables.decode_past_llvm(&code[..4], &mut text),
        None,
        "cut short"
    );
    let dpp = [0x7E00_CCFAu32, 0x0000_00FF]; // v_swap_b16_dpp
    let code: Vec<u8> = dpp.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(tables.decode_past_llvm(&code, &mut text), Some(8));
}

//! Code objects loaded into a decoder handle (`codeobj_load`), and built-in disassembly over
//! them: the ISA source of `parse` when the handle has no ISA callback (API.md §4.7, §4.12).
//!
//! **Addressing.** A trace without code-object markers asks for `{code_object_id 0, runtime
//! address}`: the object whose `[load_addr, load_addr + load_size)` holds the address answers,
//! at ELF virtual address `address - load_addr`. A trace with markers asks for `{id, ELF vaddr}`:
//! the object loaded with `load_id == id` answers. Load id 0 therefore only ever answers by range.
//!
//! **Target processor.** Taken from the ELF header (`e_machine` AMDGPU, `EF_AMDGPU_MACH` in
//! `e_flags`). tinygrad's hand-built ELFs have `e_machine == 0` and name none; for those the
//! processor is, in order: the fallback given with [`CodeObjectTable::set_fallback_target`]
//! (the default table takes it from the `ROCPROF_TRACE_DECODER_TARGET` environment variable,
//! e.g. `gfx1201`), else the one the trace header implies (gfx9 header version 4 → gfx90a,
//! 5 → gfx942, 6 → gfx950; RDNA gfx11 → gfx1100, gfx12 → gfx1200, gfx12.5 → gfx1250).
//!
//! **Tolerated header defects** (tinygrad): a zeroed `\x7fELF` magic, zeroed class / data /
//! version bytes of `e_ident`, and `e_shentsize` or `e_phentsize` of 0. Anything else that is
//! malformed is an error.

use std::collections::HashMap;
use std::sync::Arc;

use object::elf::{EM_AMDGPU, SHF_EXECINSTR};
use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
use object::{LittleEndian, Object, ObjectSection, ObjectSymbol, SymbolKind};

use super::backend::{self, Backend, Disassembler};
use super::builtin::Tables;
use super::funcmap::{self, Funcmap};
use super::{IsaError, IsaProvider};
use crate::records::Pc;
use crate::stream::header::TraceKind;

/// Environment variable giving the processor of code objects that do not name theirs.
pub const TARGET_ENV: &str = "ROCPROF_TRACE_DECODER_TARGET";

/// `EF_AMDGPU_MACH` values (low byte of `e_flags`) and their processor names.
const AMDGPU_MACHS: &[(u8, &str)] = &[
    (0x20, "gfx600"),
    (0x21, "gfx601"),
    (0x22, "gfx700"),
    (0x23, "gfx701"),
    (0x24, "gfx702"),
    (0x25, "gfx703"),
    (0x26, "gfx704"),
    (0x28, "gfx801"),
    (0x29, "gfx802"),
    (0x2a, "gfx803"),
    (0x2b, "gfx810"),
    (0x2c, "gfx900"),
    (0x2d, "gfx902"),
    (0x2e, "gfx904"),
    (0x2f, "gfx906"),
    (0x30, "gfx908"),
    (0x31, "gfx909"),
    (0x32, "gfx90c"),
    (0x33, "gfx1010"),
    (0x34, "gfx1011"),
    (0x35, "gfx1012"),
    (0x36, "gfx1030"),
    (0x37, "gfx1031"),
    (0x38, "gfx1032"),
    (0x39, "gfx1033"),
    (0x3a, "gfx602"),
    (0x3b, "gfx705"),
    (0x3c, "gfx805"),
    (0x3d, "gfx1035"),
    (0x3e, "gfx1034"),
    (0x3f, "gfx90a"),
    (0x40, "gfx940"),
    (0x41, "gfx1100"),
    (0x42, "gfx1013"),
    (0x43, "gfx1150"),
    (0x44, "gfx1103"),
    (0x45, "gfx1036"),
    (0x46, "gfx1101"),
    (0x47, "gfx1102"),
    (0x48, "gfx1200"),
    (0x49, "gfx1250"),
    (0x4a, "gfx1151"),
    (0x4b, "gfx941"),
    (0x4c, "gfx942"),
    (0x4e, "gfx1201"),
    (0x4f, "gfx950"),
    (0x51, "gfx9-generic"),
    (0x52, "gfx10-1-generic"),
    (0x53, "gfx10-3-generic"),
    (0x54, "gfx11-generic"),
    (0x55, "gfx1152"),
    (0x58, "gfx1153"),
    (0x59, "gfx12-generic"),
    (0x5f, "gfx9-4-generic"),
];

/// The table's spelling of processor `name`, if it is one.
fn known_processor(name: &str) -> Option<&'static str> {
    AMDGPU_MACHS
        .iter()
        .map(|&(_, known)| known)
        .find(|&known| known == name)
}

/// The processor a trace of this kind implies, for code objects that name none.
fn processor_of_trace(kind: TraceKind) -> Option<&'static str> {
    match kind {
        TraceKind::Gfx9 { header } => match (header >> 13) & 0x7 {
            4 => Some("gfx90a"),
            5 => Some("gfx942"),
            6 => Some("gfx950"),
            _ => None,
        },
        TraceKind::Rdna { version: 3 } => Some("gfx1100"),
        TraceKind::Rdna { version: 4 } => Some("gfx1200"),
        TraceKind::Rdna { version: 5 } => Some("gfx1250"),
        TraceKind::Rdna { .. } => None,
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodeObjectError {
    #[error("the code object is not a 64-bit little-endian ELF")]
    NotElf,
    #[error("malformed ELF: {0}")]
    Malformed(String),
    #[error("the ELF is for machine {0}, not AMDGPU")]
    NotAmdgpu(u16),
    #[error("unknown AMDGPU processor (EF_AMDGPU_MACH {0:#x})")]
    UnknownProcessor(u8),
    #[error("the ELF has no executable section")]
    NoCode,
    #[error("no disassembler back-end is available")]
    NoBackend,
    #[error("no available disassembler back-end knows {0}")]
    UnsupportedTarget(&'static str),
    #[error("{0:?} is not a known AMDGPU processor name")]
    UnknownTargetName(String),
}

impl CodeObjectError {
    /// True when the failure is the missing disassembler, not the code object.
    pub fn is_missing_disassembler(&self) -> bool {
        matches!(
            self,
            CodeObjectError::NoBackend | CodeObjectError::UnsupportedTarget(_)
        )
    }
}

/// A range of executable bytes: ELF virtual address and where the bytes sit in the image.
#[derive(Clone, Copy, Debug)]
struct CodeRange {
    vaddr: u64,
    offset: usize,
    size: usize,
}

/// A function symbol of the code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub vaddr: u64,
    pub size: u64,
}

/// A source position from DWARF line information.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceLine<'a> {
    pub file: &'a str,
    pub line: u32,
}

#[derive(Clone, Copy, Debug)]
struct LineRow {
    vaddr: u64,
    file: u32,
    line: u32,
    end_sequence: bool,
}

/// The DWARF line table (`.debug_line`), flattened to rows sorted by address.
#[derive(Debug, Default)]
struct LineTable {
    rows: Vec<LineRow>,
    files: Vec<String>,
}

type DwarfSlice<'a> = gimli::EndianSlice<'a, gimli::LittleEndian>;

impl LineTable {
    /// Reads every unit's line program; a code object without (valid) DWARF has no rows.
    fn read(elf: &ElfFile64<'_, LittleEndian>) -> LineTable {
        let mut table = LineTable::default();
        if table.read_units(elf).is_err() {
            table = LineTable::default();
        }
        // At equal addresses an end-of-sequence row sorts first, so a lookup lands on the start
        // of the sequence that follows it.
        table.rows.sort_by_key(|row| (row.vaddr, !row.end_sequence));
        table
    }

    fn read_units(&mut self, elf: &ElfFile64<'_, LittleEndian>) -> Result<(), gimli::Error> {
        let dwarf = gimli::Dwarf::load(|id| -> Result<DwarfSlice<'_>, gimli::Error> {
            let data = elf
                .section_by_name(id.name())
                .and_then(|s| s.data().ok())
                .unwrap_or(&[]);
            Ok(gimli::EndianSlice::new(data, gimli::LittleEndian))
        })?;
        let mut units = dwarf.units();
        while let Some(header) = units.next()? {
            let unit = dwarf.unit(header)?;
            let Some(program) = unit.line_program.clone() else {
                continue;
            };
            let mut file_slots: HashMap<u64, u32> = HashMap::new();
            let mut rows = program.rows();
            while let Some((header, row)) = rows.next_row()? {
                let file = match file_slots.get(&row.file_index()) {
                    Some(&slot) => slot,
                    None => {
                        let slot = self.files.len() as u32;
                        self.files
                            .push(file_name(&dwarf, &unit, header, row.file_index()));
                        file_slots.insert(row.file_index(), slot);
                        slot
                    }
                };
                self.rows.push(LineRow {
                    vaddr: row.address(),
                    file,
                    line: row
                        .line()
                        .map_or(0, |l| l.get().min(u32::MAX as u64) as u32),
                    end_sequence: row.end_sequence(),
                });
            }
        }
        Ok(())
    }

    fn line_at(&self, vaddr: u64) -> Option<SourceLine<'_>> {
        let after = self.rows.partition_point(|row| row.vaddr <= vaddr);
        let row = self.rows.get(after.checked_sub(1)?)?;
        if row.end_sequence {
            return None;
        }
        let file = self.files.get(row.file as usize)?;
        Some(SourceLine {
            file,
            line: row.line,
        })
    }
}

/// `directory/name` of file `index` of a line program, as far as it can be resolved.
fn file_name(
    dwarf: &gimli::Dwarf<DwarfSlice<'_>>,
    unit: &gimli::Unit<DwarfSlice<'_>>,
    header: &gimli::LineProgramHeader<DwarfSlice<'_>>,
    index: u64,
) -> String {
    let Some(entry) = header.file(index) else {
        return String::new();
    };
    let text = |value| {
        dwarf
            .attr_string(unit, value)
            .map(|s| String::from_utf8_lossy(s.slice()).into_owned())
            .unwrap_or_default()
    };
    let name = text(entry.path_name());
    match entry.directory(header).map(text) {
        Some(directory) if !directory.is_empty() && !name.starts_with('/') => {
            format!("{directory}/{name}")
        }
        _ => name,
    }
}

/// ELF bytes in 8-byte aligned storage: the `object` crate reads header tables in place.
#[derive(Debug)]
struct Image {
    words: Vec<u64>,
    len: usize,
}

impl Image {
    fn new(bytes: &[u8]) -> Image {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut padded = [0u8; 8];
            padded[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_ne_bytes(padded);
        }
        Image {
            words,
            len: bytes.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes of the `u64` buffer, which holds at least that many; every byte
        // pattern is a valid `u8`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

/// The ELF bytes with the defects of hand-built ELFs repaired (see the module documentation);
/// a header table at an unaligned offset is moved to an aligned copy at the end.
fn repaired(data: &[u8]) -> Result<Vec<u8>, CodeObjectError> {
    const MAGIC: [u8; 4] = *b"\x7fELF";
    const ELFCLASS64: u8 = 2;
    const ELFDATA2LSB: u8 = 1;
    const EV_CURRENT: u8 = 1;
    if data.len() < 64 {
        return Err(CodeObjectError::NotElf);
    }
    let mut image = data.to_vec();
    match image[..4] {
        [0, 0, 0, 0] => image[..4].copy_from_slice(&MAGIC),
        ref magic if *magic == MAGIC => {}
        _ => return Err(CodeObjectError::NotElf),
    }
    for (index, value) in [(4, ELFCLASS64), (5, ELFDATA2LSB), (6, EV_CURRENT)] {
        if image[index] == 0 {
            image[index] = value;
        }
    }
    if image[4] != ELFCLASS64 || image[5] != ELFDATA2LSB {
        return Err(CodeObjectError::NotElf);
    }
    let half = |image: &[u8], at: usize| u16::from_le_bytes([image[at], image[at + 1]]);
    // (table offset field, entry size field, entry count field, real entry size)
    for (offset_at, size_at, count_at, entry_size) in
        [(0x20, 0x36, 0x38, 56), (0x28, 0x3a, 0x3c, 64)]
    {
        let count = usize::from(half(&image, count_at));
        if count == 0 {
            continue;
        }
        if half(&image, size_at) == 0 {
            image[size_at..size_at + 2].copy_from_slice(&(entry_size as u16).to_le_bytes());
        }
        let offset =
            u64::from_le_bytes(image[offset_at..offset_at + 8].try_into().unwrap_or([0; 8]));
        let table_len = count * usize::from(half(&image, size_at));
        let table = usize::try_from(offset)
            .ok()
            .and_then(|offset| Some(offset..offset.checked_add(table_len)?))
            .filter(|range| offset % 8 != 0 && range.end <= data.len());
        if let Some(table) = table {
            image.resize(image.len().next_multiple_of(8), 0);
            let moved_to = image.len() as u64;
            image.extend_from_within(table);
            image[offset_at..offset_at + 8].copy_from_slice(&moved_to.to_le_bytes());
        }
    }
    Ok(image)
}

/// One loaded code object: its own copy of the ELF bytes and what was read from them.
#[derive(Debug)]
pub struct CodeObject {
    pub load_id: u64,
    pub load_addr: u64,
    pub load_size: u64,
    /// The processor named by the ELF header, if any.
    pub target: Option<&'static str>,
    image: Image,
    code: Vec<CodeRange>,
    symbols: Vec<Symbol>,
    lines: LineTable,
    /// The `.sqtt_funcmap` section, for MARKER records.
    funcmap: Option<Arc<Funcmap>>,
}

impl CodeObject {
    pub fn parse(
        load_id: u64,
        load_addr: u64,
        load_size: u64,
        data: &[u8],
    ) -> Result<CodeObject, CodeObjectError> {
        let image = Image::new(&repaired(data)?);
        let elf = ElfFile64::<LittleEndian>::parse(image.bytes())
            .map_err(|e| CodeObjectError::Malformed(e.to_string()))?;
        let header = elf.elf_header();
        let target = match header.e_machine(LittleEndian) {
            0 => None,
            EM_AMDGPU => {
                let mach = header.e_flags(LittleEndian) as u8;
                let found = AMDGPU_MACHS.iter().find(|&&(value, _)| value == mach);
                Some(found.ok_or(CodeObjectError::UnknownProcessor(mach))?.1)
            }
            other => return Err(CodeObjectError::NotAmdgpu(other)),
        };
        let mut code = Vec::new();
        // The raw table, not `sections()`: hand-built ELFs put `.text` at index 0, where a
        // regular ELF has its null section.
        for section in elf.elf_section_table().iter() {
            let executable = section.sh_flags(LittleEndian) & u64::from(SHF_EXECINSTR) != 0;
            let Some((offset, size)) = section.file_range(LittleEndian) else {
                continue;
            };
            if !executable || size == 0 {
                continue;
            }
            // `data()` checks that the bytes lie inside the image.
            section
                .data(LittleEndian, image.bytes())
                .map_err(|e| CodeObjectError::Malformed(e.to_string()))?;
            code.push(CodeRange {
                vaddr: section.sh_addr(LittleEndian),
                offset: offset as usize,
                size: size as usize,
            });
        }
        if code.is_empty() {
            return Err(CodeObjectError::NoCode);
        }
        let mut symbols: Vec<Symbol> = elf
            .symbols()
            .chain(elf.dynamic_symbols())
            .filter(|symbol| symbol.kind() == SymbolKind::Text)
            .filter_map(|symbol| {
                let name = symbol.name().ok().filter(|name| !name.is_empty())?;
                Some(Symbol {
                    name: name.to_owned(),
                    vaddr: symbol.address(),
                    size: symbol.size(),
                })
            })
            .collect();
        symbols.sort_by(|a, b| (a.vaddr, &a.name).cmp(&(b.vaddr, &b.name)));
        symbols.dedup();
        let lines = LineTable::read(&elf);
        let funcmap = elf
            .section_by_name(funcmap::SECTION)
            .and_then(|section| section.data().ok())
            .map(|rows| Arc::new(Funcmap::parse(rows)));
        Ok(CodeObject {
            load_id,
            load_addr,
            load_size,
            target,
            image,
            code,
            symbols,
            lines,
            funcmap,
        })
    }

    /// The executable bytes from `vaddr` to the end of their section.
    pub fn code_at(&self, vaddr: u64) -> Option<&[u8]> {
        let range = self.code.iter().find(|r| {
            vaddr
                .checked_sub(r.vaddr)
                .is_some_and(|delta| delta < r.size as u64)
        })?;
        let start = range.offset + (vaddr - range.vaddr) as usize;
        self.image.bytes().get(start..range.offset + range.size)
    }

    /// Function symbols, sorted by address.
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// The function symbol whose `[vaddr, vaddr + size)` holds `vaddr`.
    pub fn symbol_at(&self, vaddr: u64) -> Option<&Symbol> {
        let after = self.symbols.partition_point(|s| s.vaddr <= vaddr);
        self.symbols[..after]
            .iter()
            .rev()
            .find(|s| vaddr - s.vaddr < s.size.max(1))
    }

    /// The source line of the instruction at `vaddr`, from DWARF line information.
    pub fn line_at(&self, vaddr: u64) -> Option<SourceLine<'_>> {
        self.lines.line_at(vaddr)
    }

    /// True when runtime address `address` lies in `[load_addr, load_addr + load_size)`.
    fn holds_runtime(&self, address: u64) -> bool {
        address
            .checked_sub(self.load_addr)
            .is_some_and(|delta| delta < self.load_size)
    }
}

/// The code object answering for `pc` among `objects`, and the ELF virtual address `pc` stands
/// for (see the module documentation).
fn locate(objects: &[CodeObject], pc: Pc) -> Option<(&CodeObject, u64)> {
    if pc.code_object_id == 0 {
        let object = objects.iter().find(|o| o.holds_runtime(pc.address))?;
        Some((object, pc.address - object.load_addr))
    } else {
        let object = objects.iter().find(|o| o.load_id == pc.code_object_id)?;
        Some((object, pc.address))
    }
}

/// What one PC disassembled to: text in the table's arena, and the encoded size.
#[derive(Clone, Copy)]
struct Answer {
    text_start: usize,
    text_len: usize,
    size: u64,
}

/// The code objects of one handle, with the disassemblers and answers they need.
pub struct CodeObjectTable {
    objects: Vec<CodeObject>,
    /// `None`: the system's back-ends, discovered on first need (not at handle creation).
    backends: Option<&'static [Backend]>,
    fallback_target: Option<&'static str>,
    trace_target: Option<&'static str>,
    /// One slot per processor asked for; `None` when no back-end knows it.
    disassemblers: Vec<(&'static str, Option<Disassembler>)>,
    /// Answers per PC; failures that depend on the bytes (undecodable) are kept too.
    answers: HashMap<Pc, Result<Answer, IsaError>>,
    texts: Vec<u8>,
    scratch: Vec<u8>,
}

impl Default for CodeObjectTable {
    /// An empty table over the system's back-ends, with the fallback target of
    /// `ROCPROF_TRACE_DECODER_TARGET` when that names a known processor.
    fn default() -> Self {
        CodeObjectTable {
            objects: Vec::new(),
            backends: None,
            fallback_target: std::env::var(TARGET_ENV)
                .ok()
                .and_then(|n| known_processor(&n)),
            trace_target: None,
            disassemblers: Vec::new(),
            answers: HashMap::new(),
            texts: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

impl CodeObjectTable {
    /// An empty table that disassembles with `backends` (first that knows a target wins).
    pub fn with_backends(backends: &'static [Backend]) -> Self {
        CodeObjectTable {
            backends: Some(backends),
            fallback_target: None,
            ..Self::default()
        }
    }

    pub fn backends(&self) -> &'static [Backend] {
        self.backends.unwrap_or_else(backend::system)
    }

    pub fn objects(&self) -> &[CodeObject] {
        &self.objects
    }

    /// The processor used for code objects whose ELF names none.
    pub fn set_fallback_target(&mut self, name: &str) -> Result<(), CodeObjectError> {
        let target = known_processor(name)
            .ok_or_else(|| CodeObjectError::UnknownTargetName(name.to_owned()))?;
        self.fallback_target = Some(target);
        self.forget_answers();
        Ok(())
    }

    /// Registers a code object (replacing one with the same `load_id`). Fails without a
    /// back-end, or when the ELF names a processor no back-end knows.
    pub fn load(
        &mut self,
        load_id: u64,
        load_addr: u64,
        load_size: u64,
        data: &[u8],
    ) -> Result<(), CodeObjectError> {
        let backends = self.backends();
        if backends.is_empty() {
            return Err(CodeObjectError::NoBackend);
        }
        let object = CodeObject::parse(load_id, load_addr, load_size, data)?;
        if let Some(target) = object.target {
            if !backends.iter().any(|b| b.supports(target)) {
                return Err(CodeObjectError::UnsupportedTarget(target));
            }
        }
        self.objects.retain(|o| o.load_id != load_id);
        self.objects.push(object);
        self.forget_answers();
        Ok(())
    }

    /// Removes the code object loaded with `load_id`; false when there is none.
    pub fn unload(&mut self, load_id: u64) -> bool {
        let before = self.objects.len();
        self.objects.retain(|o| o.load_id != load_id);
        self.forget_answers();
        self.objects.len() != before
    }

    /// The code object answering for `pc`, and the ELF virtual address `pc` stands for.
    pub fn locate(&self, pc: Pc) -> Option<(&CodeObject, u64)> {
        locate(&self.objects, pc)
    }

    fn forget_answers(&mut self) {
        self.answers.clear();
        self.texts.clear();
    }

    /// Disassembles `pc` into `self.scratch`.
    fn decode(&mut self, pc: Pc) -> Result<u64, IsaError> {
        let (object, vaddr) = locate(&self.objects, pc).ok_or(IsaError::UnknownAddress)?;
        let code = object.code_at(vaddr).ok_or(IsaError::UnknownAddress)?;
        let target = object
            .target
            .or(self.fallback_target)
            .or(self.trace_target)
            .ok_or(IsaError::NoDisassembler)?;
        let disassemblers = &mut self.disassemblers;
        let slot = match disassemblers.iter().position(|(t, _)| *t == target) {
            Some(slot) => slot,
            None => {
                let backends = self.backends.unwrap_or_else(backend::system);
                let opened = backends.iter().find_map(|b| b.open(target));
                disassemblers.push((target, opened));
                disassemblers.len() - 1
            }
        };
        let disassembler = disassemblers[slot]
            .1
            .as_mut()
            .ok_or(IsaError::NoDisassembler)?;
        let scratch = &mut self.scratch;
        let size = disassembler.decode(code, vaddr, scratch).or_else(|| {
            // What the back-end rejects (`.long`), the tables may still know: see
            // `Tables::decode_past_llvm`.
            scratch.clear();
            Tables::of(target)?.decode_past_llvm(code, scratch)
        });
        size.map(|size| size as u64).ok_or(IsaError::Undecodable)
    }
}

impl IsaProvider for CodeObjectTable {
    fn funcmap(&mut self, code_object_id: u64) -> Option<Arc<Funcmap>> {
        let object = self
            .objects()
            .iter()
            .find(|o| o.load_id == code_object_id)?;
        object.funcmap.clone()
    }

    fn has_funcmaps(&self) -> bool {
        self.objects.iter().any(|o| o.funcmap.is_some())
    }

    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        text.clear();
        let answer = match self.answers.get(&pc) {
            Some(answer) => *answer,
            None => {
                let answer = match self.decode(pc) {
                    Ok(size) => {
                        let text_start = self.texts.len();
                        self.texts.extend_from_slice(&self.scratch);
                        Ok(Answer {
                            text_start,
                            text_len: self.scratch.len(),
                            size,
                        })
                    }
                    Err(error) => Err(error),
                };
                // Only answers fixed by the loaded bytes are kept: addresses outside every
                // object could be anything a corrupt trace names.
                if matches!(answer, Ok(_) | Err(IsaError::Undecodable)) {
                    self.answers.insert(pc, answer);
                }
                answer
            }
        }?;
        let end = answer.text_start + answer.text_len;
        text.extend_from_slice(self.texts.get(answer.text_start..end).unwrap_or_default());
        Ok(answer.size)
    }

    fn trace_kind(&mut self, kind: TraceKind) {
        let target = processor_of_trace(kind);
        if target != self.trace_target {
            self.trace_target = target;
            self.forget_answers();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64: one executable section and, optionally, a `.sqtt_funcmap` section.
    fn elf(funcmap: Option<&[u8]>) -> Vec<u8> {
        let text = 0xBF81_0000u32.to_le_bytes();
        let rows = funcmap.unwrap_or_default();
        let names = b"\0.text\0.sqtt_funcmap\0.shstrtab\0";
        let text_at = 64;
        let rows_at = text_at + text.len();
        let names_at = rows_at + rows.len();
        let headers_at = (names_at + names.len()).next_multiple_of(8);
        let mut sections: Vec<(u32, u32, u64, u64, usize, usize)> = vec![
            (0, 0, 0, 0, 0, 0),
            (1, 1, 0x6, 0x1000, text_at, text.len()),
            (21, 3, 0, 0, names_at, names.len()),
        ];
        if funcmap.is_some() {
            sections.push((7, 1, 0, 0, rows_at, rows.len()));
        }
        let mut out = vec![0u8; 64];
        out[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        out[16..18].copy_from_slice(&1u16.to_le_bytes());
        out[20..24].copy_from_slice(&1u32.to_le_bytes());
        out[40..48].copy_from_slice(&(headers_at as u64).to_le_bytes());
        out[52..54].copy_from_slice(&64u16.to_le_bytes());
        out[58..60].copy_from_slice(&64u16.to_le_bytes());
        out[60..62].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        out[62..64].copy_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&text);
        out.extend_from_slice(rows);
        out.extend_from_slice(names);
        out.resize(headers_at, 0);
        for (name, kind, flags, addr, offset, size) in sections {
            out.extend_from_slice(&name.to_le_bytes());
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&flags.to_le_bytes());
            out.extend_from_slice(&addr.to_le_bytes());
            out.extend_from_slice(&(offset as u64).to_le_bytes());
            out.extend_from_slice(&(size as u64).to_le_bytes());
            out.extend_from_slice(&[0; 24]);
        }
        out
    }

    #[test]
    fn the_funcmap_section_is_read_at_load() {
        let object = CodeObject::parse(4, 0, 0x1000, &elf(Some(b"F:1:outer\nP:2:tick\n"))).unwrap();
        let funcmap = object.funcmap.as_ref().expect("section read");
        assert_eq!(funcmap.find(2).map(|e| e.id), Some(2));
        let plain = CodeObject::parse(5, 0, 0x1000, &elf(None)).unwrap();
        assert!(plain.funcmap.is_none());
        let mut table = CodeObjectTable::default();
        table.objects.push(plain);
        assert!(!table.has_funcmaps());
        table.objects.push(object);
        assert!(table.has_funcmaps());
        assert!(table.funcmap(4).is_some());
    }
}

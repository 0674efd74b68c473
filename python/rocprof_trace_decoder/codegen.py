"""Static code metadata (the code.json document) from explicit GPU code objects.

Disassembly comes from ``llvm-objdump`` (full operand text), or on a machine without it from the
decoder library's built-in tables (mnemonics and branch offsets, :mod:`.builtin_disasm`); labels
come from the ELF symbol tables, source locations from the DWARF line program (``pyelftools``),
marker tables from the ``.sqtt_funcmap`` section. Nothing here scans directories or writes files.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .builtin_disasm import code_object_disassembly
from .code_index import CODE_HEADER, CodeIndex

__all__ = [
    "HEADER",
    "SEPARATOR",
    "TOOL_VERSION",
    "CodeArtifacts",
    "CodeObject",
    "build_address_ranges",
    "extract_paths_from_comments",
    "generate_code_artifacts",
    "generate_code_index",
    "is_elf",
    "llvm_objdump",
    "lookup_range",
    "parse_disassembly",
    "read_symbol_labels",
]

TOOL_VERSION = "snapshot_dwarf-1.1"
HEADER = CODE_HEADER
SEPARATOR = " -> "  # joins a source location with the call sites it was inlined into

# Newest first: a versioned LLVM from the distribution knows more GPU targets than the default one.
_VERSIONED_OBJDUMPS = [f"llvm-objdump-{v}" for v in range(22, 13, -1)]

_INSTRUCTION_LINE = re.compile(r"^\s+(.*?)\s*//\s*([0-9A-Fa-f]+):\s*(.+)\s*$")
_DECIMAL = re.compile(r"^-?\d+$")
_SOURCE_LOCATION = re.compile(r"((?:/|\.{1,2}/)?[\w./+\-]+\.\w+):(\d+|\?)")
_MAX_CLOCK_BITS = 29


@dataclass(frozen=True)
class CodeObject:
    path: str | Path
    code_object_id: int


@dataclass(frozen=True)
class CodeArtifacts:
    code_index: CodeIndex
    source_paths: tuple[Path, ...]


# --- tools -----------------------------------------------------------------------------------


def _rocm_roots() -> list[Path]:
    roots = [Path(os.environ[v]).expanduser() for v in ("ROCM_HOME", "ROCM_PATH") if os.environ.get(v)]
    roots.append(Path("/opt/rocm"))
    return list(dict.fromkeys(roots))


@functools.lru_cache(maxsize=None)
def llvm_objdump() -> str:
    """Path of llvm-objdump: ROCm installs first, then versioned then plain names on PATH."""
    for root in _rocm_roots():
        for candidate in (root / "llvm" / "bin" / "llvm-objdump", root / "bin" / "llvm-objdump"):
            if candidate.is_file():
                return str(candidate)
    for name in [*_VERSIONED_OBJDUMPS, "llvm-objdump"]:
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("Could not locate llvm-objdump")


def is_elf(path: str | Path) -> bool:
    try:
        with Path(path).open("rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


# --- disassembly and symbols -----------------------------------------------------------------


def _branch_with_raw_offset(text: str, raw_words: str) -> str:
    """Branch targets printed as labels become the raw unsigned 16-bit SOPP offset, the
    form the decoder's PC stitcher reads (it treats values >= 32768 as negative)."""
    if "branch" not in text:
        return text
    parts = text.rsplit(None, 1)
    if len(parts) != 2 or _DECIMAL.match(parts[1]):
        return text
    words = raw_words.split()
    if not words or len(words[0]) < 4:
        return text
    try:
        offset = int(words[0][-4:], 16)
    except ValueError:
        return text
    return f"{parts[0]} {offset}"


def parse_disassembly(elf_path: str | Path, lib_path: str | os.PathLike[str] | None = None) -> list[tuple[int, str]]:
    """[(vaddr, instruction text)] in llvm-objdump order: llvm-objdump's text where it is installed,
    else the built-in disassembly of the decoder library (``lib_path``, else the one the package
    loads)."""
    try:
        objdump = llvm_objdump()
    except FileNotFoundError:
        return code_object_disassembly(elf_path, lib_path)
    process = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(elf_path)],
        capture_output=True,
        text=True,
        errors="replace",
    )
    if process.returncode != 0:
        detail = (process.stderr or process.stdout).strip()
        message = f"llvm-objdump failed for {elf_path} with exit code {process.returncode}"
        raise RuntimeError(f"{message}: {detail}" if detail else message)
    instructions = []
    for line in process.stdout.splitlines():
        if not line.strip() or line.lstrip().startswith(";"):
            continue
        match = _INSTRUCTION_LINE.match(line.rstrip())
        if match:
            text, address, raw_words = match.groups()
            instructions.append((int(address, 16), _branch_with_raw_offset(text.strip(), raw_words)))
    return instructions


def read_symbol_labels(elf_path: str | Path) -> tuple[dict[int, tuple[str, str]], dict[int, list[str]]]:
    """(function symbols {vaddr: (name, demangled)}, debug labels {vaddr: [name, ...]})."""
    from elftools.elf.elffile import ELFFile

    functions: dict[int, tuple[str, str]] = {}
    labels: dict[int, list[str]] = {}
    with Path(elf_path).open("rb") as handle:
        elf = ELFFile(handle)
        for section_name in (".symtab", ".dynsym"):
            section = elf.get_section_by_name(section_name)
            if section is None:
                continue
            for symbol in section.iter_symbols():
                name = symbol.name
                if not name:
                    continue
                address = int(symbol["st_value"])
                kind = symbol["st_info"]["type"]
                if kind == "STT_FUNC":
                    functions.setdefault(address, (name, name))
                elif kind == "STT_NOTYPE" and name.startswith("label"):
                    if symbol["st_shndx"] not in ("SHN_UNDEF", "SHN_ABS"):
                        names = labels.setdefault(address, [])
                        if name not in names:
                            names.append(name)
    return functions, labels


def _label_text(name: str) -> str:
    # The viewer treats only "; _..." (and "label...") rows as labels.
    return f"; {name}" if name.startswith("_") else f"; _{name}"


# --- DWARF source locations ------------------------------------------------------------------


def _text(value) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else (value or "")


def _file_name(line_program, file_index: int) -> str | None:
    """File path of a line-program file index (0-based from DWARF 5 on, 1-based before)."""
    header = line_program.header
    version = header.get("version", 4)
    files = header.get("file_entry", [])
    directories = header.get("include_directory", [])
    index = file_index if version >= 5 else file_index - 1
    if not 0 <= index < len(files):
        return None
    entry = files[index]
    name = _text(entry.name)
    directory_index = entry.dir_index if version >= 5 else entry.dir_index - 1
    directory = _text(directories[directory_index]) if 0 <= directory_index < len(directories) else ""
    if directory and not os.path.isabs(name):
        return os.path.normpath(os.path.join(directory, name))
    return os.path.normpath(name)


# Address ranges of a DIE (DWARF 5 §2.17). A range list (§2.17.3) lives in .debug_ranges up to
# DWARF 4 (pairs of addresses) and in .debug_rnglists from DWARF 5 on (entries of a kind byte and
# operands; §7.25). Offsets within a list are taken from the base address in
# force: the compilation unit's DW_AT_low_pc until a base-address entry sets another.

_ADDRESS_FORMS = {"DW_FORM_addr", "DW_FORM_addrx", "DW_FORM_addrx1", "DW_FORM_addrx2", "DW_FORM_addrx3",
                  "DW_FORM_addrx4", "DW_FORM_GNU_addr_index"}  # fmt: skip

# DW_RLE_* (DWARF 5 table 7.30).
_RLE_END_OF_LIST, _RLE_BASE_ADDRESSX, _RLE_STARTX_ENDX, _RLE_STARTX_LENGTH = 0, 1, 2, 3
_RLE_OFFSET_PAIR, _RLE_BASE_ADDRESS, _RLE_START_END, _RLE_START_LENGTH = 4, 5, 6, 7


class _Reader:
    """Little- or big-endian reads from a byte string; reading past its end raises IndexError."""

    def __init__(self, data: bytes, position: int, little_endian: bool):
        self.data, self.position, self.order = data, position, "little" if little_endian else "big"

    def fixed(self, size: int) -> int:
        if self.position + size > len(self.data):
            raise IndexError("range list runs past the end of its section")
        value = int.from_bytes(self.data[self.position : self.position + size], self.order)
        self.position += size
        return value

    def uleb128(self) -> int:
        value = shift = 0
        while True:
            byte = self.fixed(1)
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value


def _debug_ranges_list(data: bytes, offset: int, address_size: int, base: int, little_endian: bool):
    """(begin, end) pairs of a DWARF 2-4 range list: offsets from the base address, an entry whose
    begin is the largest address selects a new base, (0, 0) ends the list."""
    reader = _Reader(data, offset, little_endian)
    largest = (1 << (8 * address_size)) - 1
    while True:
        begin, end = reader.fixed(address_size), reader.fixed(address_size)
        if begin == 0 and end == 0:
            return
        if begin == largest:
            base = end
        else:
            yield base + begin, base + end


def _rnglists_list(data: bytes, offset: int, address_size: int, base: int, little_endian: bool, address_at):
    """(begin, end) pairs of a DWARF 5 range list; `address_at(index)` reads .debug_addr."""
    reader = _Reader(data, offset, little_endian)
    while True:
        kind = reader.fixed(1)
        if kind == _RLE_END_OF_LIST:
            return
        if kind == _RLE_BASE_ADDRESSX:
            base = address_at(reader.uleb128())
        elif kind == _RLE_BASE_ADDRESS:
            base = reader.fixed(address_size)
        elif kind == _RLE_OFFSET_PAIR:
            begin = reader.uleb128()
            yield base + begin, base + reader.uleb128()
        elif kind == _RLE_START_END:
            begin = reader.fixed(address_size)
            yield begin, reader.fixed(address_size)
        elif kind == _RLE_START_LENGTH:
            begin = reader.fixed(address_size)
            yield begin, begin + reader.uleb128()
        elif kind == _RLE_STARTX_ENDX:
            begin = address_at(reader.uleb128())
            yield begin, address_at(reader.uleb128())
        elif kind == _RLE_STARTX_LENGTH:
            begin = address_at(reader.uleb128())
            yield begin, begin + reader.uleb128()
        else:
            raise ValueError(f"unknown range list entry kind {kind:#x}")


def _section_bytes(section) -> bytes:
    if section is None:
        return b""
    section.stream.seek(0)
    return section.stream.read()


@dataclass
class _UnitRanges:
    """Reads the address ranges of the DIEs of one compilation unit."""

    base: int  # the unit's base address: its DW_AT_low_pc, else 0
    version: int
    address_size: int
    little_endian: bool
    lists: bytes  # .debug_rnglists from DWARF 5 on, else .debug_ranges
    address_at: Callable[[int], int]  # entry `index` of the unit's .debug_addr table

    @classmethod
    def of_unit(cls, dwarf, cu) -> _UnitRanges:
        top = cu.get_top_DIE().attributes
        version = cu.header.version
        section = dwarf.debug_rnglists_sec if version >= 5 else dwarf.debug_ranges_sec
        return cls(
            base=top["DW_AT_low_pc"].value if "DW_AT_low_pc" in top else 0,
            version=version,
            address_size=cu.header.address_size,
            little_endian=dwarf.config.little_endian,
            lists=_section_bytes(section),
            address_at=functools.partial(dwarf.get_addr, cu),
        )

    def of(self, die) -> list[tuple[int, int]]:
        """A DIE's non-empty [low, high) ranges: its range list if it has one, else DW_AT_low_pc to
        DW_AT_high_pc (an address, or with a constant form the length). A DIE with neither, or
        with only DW_AT_low_pc (a single address), has none."""
        attributes = die.attributes
        if "DW_AT_ranges" in attributes:
            # pyelftools resolves DW_FORM_rnglistx to an offset into the section.
            offset = attributes["DW_AT_ranges"].value
            if self.version >= 5:
                pairs = _rnglists_list(self.lists, offset, self.address_size, self.base, self.little_endian,
                                       self.address_at)  # fmt: skip
            else:
                pairs = _debug_ranges_list(self.lists, offset, self.address_size, self.base, self.little_endian)
        elif "DW_AT_low_pc" in attributes and "DW_AT_high_pc" in attributes:
            low, high = attributes["DW_AT_low_pc"].value, attributes["DW_AT_high_pc"]
            pairs = [(low, high.value if high.form in _ADDRESS_FORMS else low + high.value)]
        else:
            pairs = []
        return [(low, high) for low, high in pairs if high > low]


@dataclass
class _InlinedCall:
    ranges: list[tuple[int, int]]
    depth: int
    call_site: str

    def contains(self, address: int) -> bool:
        return any(low <= address < high for low, high in self.ranges)


def _inlined_calls(dwarf, cu, line_program) -> list[_InlinedCall]:
    ranges = _UnitRanges.of_unit(dwarf, cu)
    calls: list[_InlinedCall] = []
    stack = [(cu.get_top_DIE(), 0)]
    while stack:
        die, depth = stack.pop()
        if die.tag == "DW_TAG_inlined_subroutine":
            call_file = die.attributes.get("DW_AT_call_file")
            call_line = die.attributes.get("DW_AT_call_line")
            site = ""
            if call_file is not None and call_line is not None:
                name = _file_name(line_program, call_file.value)
                site = f"{name}:{call_line.value}" if name else ""
            calls.append(_InlinedCall(ranges.of(die), depth, site))
        stack.extend((child, depth + 1) for child in die.iter_children())
    return calls


def build_address_ranges(elf_path: str | Path) -> list[tuple[int, int, str]]:
    """Sorted [(begin, end, "file:line[ -> call site ...]")]; empty when there is no usable DWARF.

    Call sites of inlined code follow the location, innermost first.
    """
    from elftools.elf.elffile import ELFFile

    ranges: list[tuple[int, int, str]] = []
    try:
        with Path(elf_path).open("rb") as handle:
            elf = ELFFile(handle)
            if not elf.has_dwarf_info():
                return []
            dwarf = elf.get_dwarf_info()
            for cu in dwarf.iter_CUs():
                line_program = dwarf.line_program_for_CU(cu)
                if line_program is None:
                    continue
                calls = _inlined_calls(dwarf, cu, line_program)
                states = [entry.state for entry in line_program.get_entries() if entry.state is not None]
                by_address: dict[int, tuple[int, str]] = {}
                for state, following in zip(states, states[1:]):
                    if state.end_sequence or following.address <= state.address:
                        continue
                    name = _file_name(line_program, state.file)
                    if name:
                        by_address[state.address] = (following.address, f"{name}:{state.line or '?'}")
                for address, (end, location) in by_address.items():
                    enclosing = sorted((c for c in calls if c.contains(address)), key=lambda c: -c.depth)
                    sites = [c.call_site for c in enclosing if c.call_site]
                    ranges.append((address, end, SEPARATOR.join([location, *sites])))
    except Exception:
        # Source locations are an optional extra: broken DWARF must not stop code generation.
        return []
    ranges.sort(key=lambda r: r[0])
    return ranges


def lookup_range(ranges: list[tuple[int, int, str]], address: int) -> str:
    index = bisect.bisect_right(ranges, address, key=lambda r: r[0]) - 1
    if index >= 0:
        begin, end, text = ranges[index]
        if begin <= address < end:
            return text
    return ""


def extract_paths_from_comments(comments: Iterable[str]) -> list[str]:
    found: dict[str, None] = {}
    for comment in comments:
        for match in _SOURCE_LOCATION.finditer(comment):
            found.setdefault(os.path.normpath(match.group(1)), None)
    return list(found)


# --- .sqtt_funcmap ---------------------------------------------------------------------------


@dataclass
class _Funcmap:
    entries: list[tuple[int, str, str, str]] = field(default_factory=list)  # (id, kind, name, source)
    clock_bits: int = 0
    clock_shift: int = 0
    extra_payload_counts: dict[int, int] = field(default_factory=dict)


def _u32(text: str) -> int | None:
    if not text or not text.isdigit() or not text.isascii():
        return None
    value = int(text)
    return value if value <= 0xFFFFFFFF else None


def _attributes(text: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in text.split(";"))
    return {key: value for key, sep, value in pairs if sep}


def _parse_funcmap(data: bytes) -> _Funcmap:
    """Best effort: malformed lines are skipped."""
    funcmap = _Funcmap()
    for raw_line in re.split(r"[\n\x00]", data.decode("utf-8", errors="replace")):
        line = raw_line.rstrip("\r \t")
        if len(line) < 2 or line[1] != ":":
            continue
        kind, body = line[0], line[2:]
        if kind == "M":
            attributes = _attributes(body)
            bits = _u32(attributes["shader_clock_bits"]) if "shader_clock_bits" in attributes else None
            shift = _u32(attributes["shader_clock_shift"]) if "shader_clock_shift" in attributes else None
            if "shader_clock_shift" in attributes and shift is None:
                continue
            if bits is None or bits > _MAX_CLOCK_BITS:
                continue
            if bits == 0:
                funcmap.clock_bits, funcmap.clock_shift = 0, 0
            elif shift is not None and shift < 32 and bits <= 32 - shift:
                funcmap.clock_bits, funcmap.clock_shift = bits, shift
        elif kind == "R":
            id_text, sep, rest = body.partition(":")
            marker_id = _u32(id_text) if sep else None
            count = _u32(_attributes(rest).get("extra_payload_count", ""))
            if marker_id is not None and count is not None:
                funcmap.extra_payload_counts[marker_id] = count
        elif kind == "K":
            name, sep, source = body.partition("@")
            if name:
                funcmap.entries.append((0, kind, name, source if sep else ""))
        elif kind in "FUP":
            id_text, sep, rest = body.partition(":")
            marker_id = _u32(id_text) if sep else None
            name, at, source = rest.partition("@")
            if marker_id is not None and name:
                funcmap.entries.append((marker_id, kind, name, source if at else ""))
    return funcmap


def _read_funcmap(elf_path: Path) -> _Funcmap | None:
    from elftools.elf.elffile import ELFFile

    try:
        with elf_path.open("rb") as handle:
            section = ELFFile(handle).get_section_by_name(".sqtt_funcmap")
            data = section.data() if section is not None else b""
    except Exception:
        return None
    return _parse_funcmap(data) if data else None


# --- driver ----------------------------------------------------------------------------------


def _check_elf_header(path: Path) -> None:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with path.open("rb") as handle:
            ELFFile(handle)
    except ELFError as exc:
        raise ValueError(f"Invalid ELF code object {path}: {exc}") from exc


def _checked_code_objects(code_objects: Iterable[CodeObject]) -> list[CodeObject]:
    checked: list[CodeObject] = []
    paths_by_id: dict[int, Path] = {}
    for code_object in code_objects:
        path = Path(code_object.path).expanduser().resolve()
        code_object_id = int(code_object.code_object_id)
        if not path.is_file():
            raise FileNotFoundError(path)
        if not is_elf(path):
            raise ValueError(f"Not an ELF code object: {path}")
        _check_elf_header(path)
        if code_object_id in paths_by_id:
            raise ValueError(
                f"Code object id {code_object_id} is used by both {paths_by_id[code_object_id]} and {path}."
            )
        paths_by_id[code_object_id] = path
        checked.append(CodeObject(path, code_object_id))
    if not checked:
        raise ValueError("No code objects were provided.")
    return checked


def generate_code_artifacts(code_objects: Iterable[CodeObject],
                            on_progress: Callable[[int, int], None] | None = None,
                            lib_path: str | os.PathLike[str] | None = None) -> CodeArtifacts:  # fmt: skip
    """Disassemble the code objects into one code.json document (held by a CodeIndex).

    Line numbers run 1, 2, ... over every row of every code object; a function or
    debug label row sits right before the instruction at its address.
    ``on_progress(done, total)`` is called after each code object. Without llvm-objdump the
    decoder library (``lib_path``, else the one the package loads) disassembles.
    """
    checked = _checked_code_objects(code_objects)
    rows: list[list] = []
    comments: list[str] = []
    kernels: list[dict] = []
    funcmap_rows: list[list] = []
    funcmap_layouts: list[list[int]] = []
    funcmap_payloads: list[list[int]] = []

    def add_row(text: str, source: str, code_object_id: int, address: int) -> None:
        rows.append([text, 0, len(rows) + 1, source, code_object_id, address, 0, 0, 0, 0])

    for done, code_object in enumerate(checked, start=1):
        path, code_object_id = Path(code_object.path), code_object.code_object_id
        source_ranges = build_address_ranges(path)
        functions, debug_labels = read_symbol_labels(path)
        for address, text in parse_disassembly(path, lib_path):
            if address in functions:
                name, demangled = functions[address]
                add_row(_label_text(name), demangled, code_object_id, address)
            for label in debug_labels.get(address, []):
                add_row(_label_text(label), "", code_object_id, address)
            comment = lookup_range(source_ranges, address)
            comments.append(comment)
            add_row(text, comment, code_object_id, address)
        for address, (name, demangled) in sorted(functions.items()):
            kernels.append({"address": address, "codeobj": code_object_id, "name": name, "demangled": demangled})

        funcmap = _read_funcmap(path)
        # Marker tables only mean something with a packed shader-clock layout to decode them.
        if funcmap is not None and funcmap.clock_bits:
            funcmap_layouts.append([code_object_id, funcmap.clock_bits, funcmap.clock_shift])
            function_addresses: dict[str, int] = {}
            for address, (name, _) in sorted(functions.items()):
                function_addresses.setdefault(name, address)
            for marker_id, kind, name, source in funcmap.entries:
                address = function_addresses.get(name, 0) if kind in "FK" else 0
                funcmap_rows.append([code_object_id, marker_id, kind, name, source, address])
                payloads = funcmap.extra_payload_counts.get(marker_id, 0)
                if kind != "K" and payloads:
                    funcmap_payloads.append([code_object_id, marker_id, payloads])
        if on_progress is not None:
            on_progress(done, len(checked))

    document: dict = {
        "code": rows,
        "version": TOOL_VERSION,
        "header": HEADER,
        "kernels": kernels,
        "hsaco": [str(c.path) for c in checked],
    }
    if funcmap_rows:
        document["sqtt_funcmap"] = funcmap_rows
    if funcmap_layouts:
        document["sqtt_funcmap_layout"] = funcmap_layouts
    if funcmap_payloads:
        document["sqtt_funcmap_payloads"] = funcmap_payloads
    source_paths = tuple(Path(p) for p in extract_paths_from_comments(comments))
    return CodeArtifacts(CodeIndex.from_document(document), source_paths)


def generate_code_index(code_objects: Iterable[CodeObject],
                        lib_path: str | os.PathLike[str] | None = None) -> CodeIndex:  # fmt: skip
    return generate_code_artifacts(code_objects, lib_path=lib_path).code_index

"""codegen on the corpus code objects, and its .sqtt_funcmap / branch rules."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys

import pytest
from conftest import PYTHON_DIR, load_json, missing
from elftools.elf.elffile import ELFFile

from rocprof_trace_decoder.codegen import (
    CodeObject,
    _branch_with_raw_offset,
    _debug_ranges_list,
    _parse_funcmap,
    _rnglists_list,
    _UnitRanges,
    build_address_ranges,
    generate_code_artifacts,
    llvm_objdump,
    lookup_range,
)
from rocprof_trace_decoder.records import Pc

# gfx950 is unknown to LLVM 19; the profile_sync_*_k0 / profile_ops objects are not valid ELF files.
DISASSEMBLABLE = [
    "gfx1100/profile_gemm_run_0",
    "gfx1100/profile_plus_run_0",
    "gfx1100/profile_sync_run_0_k1",
    "gfx1200/profile_gemm_run_0",
    "gfx1200/profile_empty_run_0",
]


@pytest.fixture(scope="module")
def objdump():
    try:
        return llvm_objdump()
    except FileNotFoundError:
        missing("llvm-objdump (apt-get install llvm-19)")


@pytest.mark.parametrize("example", DISASSEMBLABLE)
def test_code_rows_match_corpus_isa(example, corpus, objdump):
    example_dir = corpus / example
    meta = json.loads((example_dir / "meta.json").read_text())
    kernel = meta["code_objects"][0]["name"]
    artifacts = generate_code_artifacts([CodeObject(example_dir / "code_object_0.elf", 7)])
    document = artifacts.code_index.document
    rows = document["code"]
    expected = load_json(example_dir / "code_object_0.isa.json")["instructions"]

    instructions = [r for r in rows if not r[0].startswith(";")]
    assert [(r[5], r[0]) for r in instructions] == [(vaddr, text) for vaddr, _size, text in expected]
    assert [r[2] for r in rows] == list(range(1, len(rows) + 1))
    assert all(r[4] == 7 and r[1] == 0 and r[6:] == [0, 0, 0, 0] for r in rows)
    label = rows[0]
    assert label[0] == f"; _{kernel}" and label[3] == kernel and label[5] == instructions[0][5]
    assert document["kernels"] == [{"address": label[5], "codeobj": 7, "name": kernel, "demangled": kernel}]
    assert document["hsaco"] == [str((example_dir / "code_object_0.elf").resolve())]
    assert document["version"] == "snapshot_dwarf-1.1"
    # ISA answers: text and distance to the next instruction (the last one: 4).
    sizes = {vaddr: size for vaddr, size, _ in expected}
    for row in instructions[:-1]:
        assert artifacts.code_index.isa_for_pc(Pc(row[5], 7)) == (row[0], sizes[row[5]])
    assert artifacts.code_index.isa_for_pc(Pc(instructions[-1][5], 7)) == (instructions[-1][0], 4)


def test_invalid_inputs_are_rejected(corpus, tmp_path, objdump):
    with pytest.raises(ValueError, match="No code objects"):
        generate_code_artifacts([])
    with pytest.raises(ValueError, match="Invalid ELF"):
        generate_code_artifacts([CodeObject(corpus / "gfx1100/profile_sync_run_0_k0/code_object_0.elf", 0)])
    text = tmp_path / "kernel.hsaco"
    text.write_text("not an elf")
    with pytest.raises(ValueError, match="Not an ELF"):
        generate_code_artifacts([CodeObject(text, 0)])
    elf = corpus / "gfx1100/profile_gemm_run_0/code_object_0.elf"
    copy = tmp_path / "copy.hsaco"
    shutil.copyfile(elf, copy)
    with pytest.raises(ValueError, match="Code object id 3 is used by both"):
        generate_code_artifacts([CodeObject(elf, 3), CodeObject(copy, 3)])
    with pytest.raises(FileNotFoundError):
        generate_code_artifacts([CodeObject(tmp_path / "missing.hsaco", 0)])


def test_branch_operands_become_raw_unsigned_offsets():
    assert _branch_with_raw_offset("s_cbranch_scc1 label_loop", "BFA2FFFD") == "s_cbranch_scc1 65533"
    assert _branch_with_raw_offset("s_branch label_end", "BFA00001") == "s_branch 1"
    assert _branch_with_raw_offset("s_branch 5", "BFA00005") == "s_branch 5"
    assert _branch_with_raw_offset("s_setpc_b64 s[0:1]", "BE804800") == "s_setpc_b64 s[0:1]"


def test_funcmap_parsing():
    funcmap = _parse_funcmap(
        b"M:shader_clock_bits=12;shader_clock_shift=4\n"
        b"K:kern@a.cpp:1\x00"
        b"F:8:helper@a.cpp:10\r\n"
        b"U:9:scope\n"
        b"P:x:bad\n"
        b"R:8:extra_payload_count=1;other=2\n"
        b"Q:7:unknown\n"
    )
    assert (funcmap.clock_bits, funcmap.clock_shift) == (12, 4)
    assert funcmap.entries == [(0, "K", "kern", "a.cpp:1"), (8, "F", "helper", "a.cpp:10"), (9, "U", "scope", "")]
    assert funcmap.extra_payload_counts == {8: 1}
    for bad in (b"M:shader_clock_bits=30;shader_clock_shift=0", b"M:shader_clock_bits=12",
                b"M:shader_clock_bits=20;shader_clock_shift=13", b"M:shader_clock_shift=4"):  # fmt: skip
        assert _parse_funcmap(bad).clock_bits == 0, bad


def test_lookup_range():
    ranges = [(0x10, 0x20, "a.c:1"), (0x20, 0x28, "a.c:2 -> b.c:9")]
    assert lookup_range(ranges, 0x10) == "a.c:1"
    assert lookup_range(ranges, 0x27) == "a.c:2 -> b.c:9"
    assert lookup_range(ranges, 0x28) == ""
    assert lookup_range(ranges, 0x0) == ""


# --- DWARF address ranges, from byte strings of our own (DWARF 5 §2.17.3, §7.25; DWARF 4 §2.17.3)


def uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def word(value: int, size: int = 8, order: str = "little") -> bytes:
    return value.to_bytes(size, order)


def test_debug_ranges_offsets_from_a_base_that_entries_can_move():
    # 16 bytes of another list first; ours: [0x40, 0x80) and an empty [0x80, 0x80) from the
    # unit's base 0x1000, then a new base 0x7000 and [0x10, 0x2c) from it, then the end marker.
    data = bytes(16) + b"".join(word(v) for v in (0x40, 0x80, 0x80, 0x80, 2**64 - 1, 0x7000, 0x10, 0x2C, 0, 0))
    assert list(_debug_ranges_list(data, 16, 8, 0x1000, True)) == [(0x1040, 0x1080), (0x1080, 0x1080),
                                                                   (0x7010, 0x702C)]  # fmt: skip
    # 4-byte addresses, big-endian: the base-selection marker is 0xffffffff.
    data = b"".join(word(v, 4, "big") for v in (0xFFFFFFFF, 0x300, 0x4, 0x8, 0, 0))
    assert list(_debug_ranges_list(data, 0, 4, 0, False)) == [(0x304, 0x308)]


def test_rnglists_entries_of_every_kind():
    addresses = [0xA000, 0xA100, 0xB000]
    data = (
        b"\x04" + uleb(0x10) + uleb(0x20)  # offset pair from the unit's base 0x4000
        + b"\x05" + word(0x9000)  # base address
        + b"\x04" + uleb(0x4) + uleb(300)  # offset pair from 0x9000 (a two-byte ULEB128)
        + b"\x06" + word(0x100) + word(0x180)  # start, end
        + b"\x07" + word(0x200) + uleb(0x80)  # start, length
        + b"\x01" + uleb(2)  # base address from .debug_addr entry 2
        + b"\x04" + uleb(0x1) + uleb(0x3)
        + b"\x02" + uleb(0) + uleb(1)  # start and end from .debug_addr
        + b"\x03" + uleb(1) + uleb(0x10)  # start from .debug_addr, length
        + b"\x00"
        + b"\x06" + word(0xDEAD) + word(0xDEAF)  # past the end of the list
    )  # fmt: skip
    assert list(_rnglists_list(data, 0, 8, 0x4000, True, addresses.__getitem__)) == [
        (0x4010, 0x4020), (0x9004, 0x9000 + 300), (0x100, 0x180), (0x200, 0x280), (0xB001, 0xB003),
        (0xA000, 0xA100), (0xA100, 0xA110),
    ]  # fmt: skip


def test_broken_range_lists_raise():
    with pytest.raises(IndexError):
        list(_rnglists_list(b"\x06" + word(0x100), 0, 8, 0, True, None))  # the end address is missing
    with pytest.raises(IndexError):
        list(_debug_ranges_list(word(0x10) + word(0x20), 0, 8, 0, True))  # no end-of-list entry
    with pytest.raises(ValueError, match="0x9"):
        list(_rnglists_list(b"\x09", 0, 8, 0, True, None))


class Attribute:
    def __init__(self, form: str, value: int):
        self.form, self.value = form, value


class Die:
    def __init__(self, **attributes: Attribute):
        self.attributes = {f"DW_AT_{name}": attribute for name, attribute in attributes.items()}


@pytest.mark.parametrize("version", [4, 5])
def test_die_ranges_from_low_and_high_pc_or_a_range_list(version):
    if version >= 5:
        lists = b"\x07" + word(0x900) + uleb(0x20) + b"\x04" + uleb(0x0) + uleb(0x0) + b"\x00"
    else:
        lists = b"".join(word(v) for v in (0x900 - 0x100, 0x920 - 0x100, 0x50, 0x50, 0, 0))
    unit = _UnitRanges(base=0x100, version=version, address_size=8, little_endian=True, lists=lists,
                       address_at=[0x6000].__getitem__)  # fmt: skip
    low = Attribute("DW_FORM_addr", 0x500)
    # DW_AT_high_pc of class constant is the length; of class address, the end.
    assert unit.of(Die(low_pc=low, high_pc=Attribute("DW_FORM_data4", 0x40))) == [(0x500, 0x540)]
    assert unit.of(Die(low_pc=low, high_pc=Attribute("DW_FORM_udata", 0x8))) == [(0x500, 0x508)]
    assert unit.of(Die(low_pc=low, high_pc=Attribute("DW_FORM_addr", 0x520))) == [(0x500, 0x520)]
    assert unit.of(Die(low_pc=low, high_pc=Attribute("DW_FORM_addrx", 0x520))) == [(0x500, 0x520)]
    # A single address, an inverted pair and nothing at all cover no code.
    assert unit.of(Die(low_pc=low)) == []
    assert unit.of(Die(low_pc=low, high_pc=Attribute("DW_FORM_addr", 0x4F0))) == []
    assert unit.of(Die()) == []
    # A range list wins over low_pc (which may be there as a base address); empty ranges drop out.
    ranges = Attribute("DW_FORM_sec_offset", 0)
    assert unit.of(Die(ranges=ranges, low_pc=low, high_pc=Attribute("DW_FORM_data4", 4))) == [(0x900, 0x920)]


# A kernel whose helper (helper.h, called from main.cpp:20) was inlined into two pieces, [4, 8) and
# [12, 16), and whose second piece inlines inner.h (called from helper.h:7). The line program
# comes from the .loc directives (a DWARF 4 line table: file 1 is main.cpp); the unit, its DIEs
# and its range list are written out byte by byte, as DWARF 5 (`.debug_rnglists`, DW_FORM_rnglistx)
# or DWARF 4 (`.debug_ranges` with a base-address selection entry).
INLINED_KERNEL = """.text
kern:
  .file 1 "/src/main.cpp"
  .file 2 "/src/helper.h"
  .file 3 "/src/inner.h"
  .loc 1 10 0
  s_mov_b32 s0, 0
  .loc 2 3 0
  s_add_u32 s0, s0, 1
  .loc 1 21 0
  s_mul_i32 s0, s0, 3
  .loc 3 5 0
  s_sub_u32 s0, s0, 1
  .loc 1 22 0
  s_endpgm
.section .debug_abbrev,"",@progbits
  .byte 1, 0x11, 1, 0x03, 0x08, 0x10, 0x17, 0x11, 0x01, 0x12, 0x06{unit_attributes}, 0, 0
  .byte 2, 0x2e, 1, 0x03, 0x08, 0x11, 0x01, 0x12, 0x06, 0, 0
  .byte 3, 0x1d, 1, 0x55, {ranges_form}, 0x58, 0x0b, 0x59, 0x0b, 0, 0
  .byte 4, 0x1d, 0, 0x11, 0x01, 0x12, {high_pc_form}, 0x58, 0x0b, 0x59, 0x0b, 0, 0
  .byte 0
.section .debug_info,"",@progbits
  .long .Linfo_end - .Linfo_start
.Linfo_start:
  {unit_header}
  .byte 1
  .asciz "main.cpp"
  .long 0
  .quad 0
  .long 20{unit_values}
  .byte 2
  .asciz "kern"
  .quad 0
  .long 20
  .byte 3
  {ranges_value}
  .byte 1, 20
  .byte 4
  .quad 12
  {high_pc_value}
  .byte 2, 7
  .byte 0, 0, 0
.Linfo_end:
{lists}
"""

RNGLISTS_UNIT = dict(
    unit_attributes=", 0x74, 0x17",  # DW_AT_rnglists_base, sec_offset
    ranges_form="0x23",  # DW_FORM_rnglistx
    high_pc_form="0x01",  # DW_FORM_addr: the end address
    unit_header=".short 5\n  .byte 1, 8\n  .long 0",
    unit_values="\n  .long 12",  # the offsets table follows the 12-byte list header
    ranges_value=".byte 0",  # list 0
    high_pc_value=".quad 16",
    lists=""".section .debug_rnglists,"",@progbits
  .long .Lrng_end - .Lrng_start
.Lrng_start:
  .short 5
  .byte 8, 0
  .long 1, 4
  .byte 4, 4, 8  // DW_RLE_offset_pair from the unit's base
  .byte 7  // DW_RLE_start_length
  .quad 12
  .byte 4
  .byte 0
.Lrng_end:""",
)

DEBUG_RANGES_UNIT = dict(
    unit_attributes="",
    ranges_form="0x17",  # DW_FORM_sec_offset
    high_pc_form="0x06",  # DW_FORM_data4: the length
    unit_header=".short 4\n  .long 0\n  .byte 8",
    unit_values="",
    ranges_value=".long 16",  # after 16 bytes of something else
    high_pc_value=".long 4",
    lists=""".section .debug_ranges,"",@progbits
  .quad 0x100, 0x200
  .quad 4, 8
  .quad -1, 12
  .quad 0, 4
  .quad 0, 0""",
)


@pytest.mark.parametrize("unit", [RNGLISTS_UNIT, DEBUG_RANGES_UNIT], ids=["dwarf5-rnglists", "dwarf4-ranges"])
def test_inlined_call_sites_follow_the_source_location(unit, tmp_path):
    assembler = shutil.which("llvm-mc-19") or shutil.which("llvm-mc")
    if assembler is None:
        missing("llvm-mc (apt-get install llvm-19)")
    source = tmp_path / "inlined.s"
    source.write_text(INLINED_KERNEL.format(**unit))
    obj = tmp_path / "inlined.o"
    subprocess.run([assembler, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-filetype=obj", "-dwarf-version=4",
                    source, "-o", obj], check=True)  # fmt: skip
    # Code objects are linked; this object still holds one relocation (.text + 0, the line
    # program's start address, whose bytes already read 0), which pyelftools cannot apply for
    # AMDGPU. Drop the relocation section as a linker would have resolved it.
    data = bytearray(obj.read_bytes())
    elf = ELFFile(io.BytesIO(bytes(data)))
    for index, section in enumerate(elf.iter_sections()):
        if section.name.startswith(".rela.debug"):
            sh_type = elf["e_shoff"] + index * elf["e_shentsize"] + 4
            data[sh_type : sh_type + 4] = bytes(4)  # SHT_NULL
    obj.write_bytes(data)
    assert build_address_ranges(obj) == [
        (0, 4, "/src/main.cpp:10"),
        (4, 8, "/src/helper.h:3 -> /src/main.cpp:20"),
        (8, 12, "/src/main.cpp:21"),
        (12, 16, "/src/inner.h:5 -> /src/helper.h:7 -> /src/main.cpp:20"),
        (16, 20, "/src/main.cpp:22"),
    ]


LOOP_KERNEL = """.text
.globl kern
.type kern,@function
kern:
  s_mov_b32 s0, 0
label_loop:
  s_add_u32 s0, s0, 1
  s_cmp_lt_u32 s0, 4
  s_cbranch_scc1 label_loop
  s_endpgm
"""


@pytest.fixture
def loop_object(tmp_path, objdump):
    assembler = shutil.which("llvm-mc-19") or shutil.which("llvm-mc")
    if assembler is None:
        missing("llvm-mc (apt-get install llvm-19)")
    source = tmp_path / "loop.s"
    source.write_text(LOOP_KERNEL)
    obj = tmp_path / "loop.o"
    subprocess.run([assembler, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-filetype=obj", source, "-o", obj],
                   check=True)  # fmt: skip
    return obj


def test_function_and_debug_labels_and_branch_targets(loop_object):
    document = generate_code_artifacts([CodeObject(loop_object, 2)]).code_index.document
    assert [row[:6] for row in document["code"]] == [
        ["; _kern", 0, 1, "kern", 2, 0],
        ["s_mov_b32 s0, 0", 0, 2, "", 2, 0],
        ["; _label_loop", 0, 3, "", 2, 4],
        ["s_add_u32 s0, s0, 1", 0, 4, "", 2, 4],
        ["s_cmp_lt_u32 s0, 4", 0, 5, "", 2, 8],
        ["s_cbranch_scc1 65533", 0, 6, "", 2, 12],
        ["s_endpgm", 0, 7, "", 2, 16],
    ]
    assert document["kernels"] == [{"address": 0, "codeobj": 2, "name": "kern", "demangled": "kern"}]


def test_generate_code_script(loop_object, tmp_path):
    script = [sys.executable, str(PYTHON_DIR / "generate_code.py")]
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = subprocess.run(script, cwd=empty, capture_output=True, text=True)
    assert missing.returncode == 1 and "No code object given" in missing.stderr
    done = subprocess.run(script, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'code.json'}" in done.stdout and "no source files snapshotted" in done.stdout
    assert json.loads((tmp_path / "code.json").read_text())["code"][5][0] == "s_cbranch_scc1 65533"

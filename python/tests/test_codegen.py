"""codegen on the corpus code objects, and its .sqtt_funcmap / branch rules."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import PYTHON_DIR, load_json, missing

from rocprof_trace_decoder.codegen import (
    CodeObject,
    _branch_with_raw_offset,
    _parse_funcmap,
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

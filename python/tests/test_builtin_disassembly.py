"""Code metadata on a machine without llvm-objdump: ``generate_code_artifacts`` and ``rocprof-att`` run
in a subprocess whose PATH is an empty directory (no llvm-objdump, no ROCm), so the text comes from the
decoder library's built-in disassembly (``rocprof_trace_decoder_builtin_disassemble``).

Every corpus example whose code objects are ELF files naming their AMDGPU target is disassembled so; the
rows must hold the instructions of the corpus ISA dumps (llvm-objdump's text) with their mnemonics, and
the rows llvm-objdump gives on this machine: the same addresses, labels, sources and mnemonics, and the
same text wherever the built-in text has an operand (branch offsets). ``rocprof-att`` on a rocprofv3
capture per target (code-object markers: its code objects are addressed by id, not relocated) writes a
viewer folder whose waves are the reference decoder's.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ALLOW_MISSING, CORPUS, PYTHON_DIR, load_json, missing, require_corpus, se_files
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from test_corpus_viewer_folders import GoldenRecords, statistics_problems, wave_file_problems

from rocprof_trace_decoder.builtin_disasm import (
    BuiltinDisassemblyError,
    _Disassembler,
    _list_symbol_range,
    code_object_disassembly,
    disassemble,
)
from rocprof_trace_decoder.code_index import is_label_text
from rocprof_trace_decoder.codegen import CodeObject, generate_code_artifacts, llvm_objdump

CODE_OBJECT_ID = 1

# Generates the code documents of the code objects named on the command line, refusing to run where
# llvm-objdump can be found.
GENERATE_WITHOUT_LLVM = """
import json, sys
from rocprof_trace_decoder.codegen import CodeObject, generate_code_artifacts, llvm_objdump
try:
    sys.exit(f"llvm-objdump is reachable without PATH: {llvm_objdump()}")
except FileNotFoundError:
    pass
documents = {path: generate_code_artifacts([CodeObject(path, int(sys.argv[1]))]).code_index.document
             for path in sys.argv[2:]}
json.dump(documents, sys.stdout)
"""


def names_its_target(path: Path) -> bool:
    """An ELF pyelftools reads whose header names an AMDGPU processor (hand-built ELFs name none)."""
    try:
        with path.open("rb") as handle:
            elf = ELFFile(handle)
            return elf["e_machine"] == "EM_AMDGPU" and elf["e_flags"] & 0xFF != 0
    except (ELFError, OSError):
        return False


def code_object_examples() -> list[str]:
    """Examples whose every code object is an ELF naming its target."""
    if not (CORPUS / "README.md").is_file():
        if ALLOW_MISSING:
            return []
        raise FileNotFoundError(f"no corpus at {CORPUS} (set RTD_CORPUS, or RTD_ALLOW_MISSING=1)")
    examples = []
    for meta_path in sorted(CORPUS.glob("*/*/meta.json")):
        objects = json.loads(meta_path.read_text()).get("code_objects") or []
        if objects and all(o.get("file") and names_its_target(meta_path.parent / o["file"]) for o in objects):
            examples.append(f"{meta_path.parent.parent.name}/{meta_path.parent.name}")
    return examples


EXAMPLES = code_object_examples()


def code_objects(example: str) -> list[tuple[dict, Path]]:
    example_dir = require_corpus() / example
    meta = json.loads((example_dir / "meta.json").read_text())
    return [(o, example_dir / o["file"]) for o in meta["code_objects"]]


def without_llvm(tmp_path: Path, decoder_lib: str) -> dict[str, str]:
    """The environment of a machine without LLVM and ROCm: PATH an empty directory."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("ROCM_PATH", "ROCM_HOME", "LD_LIBRARY_PATH")}
    env.update(PATH=str(empty), PYTHONPATH=str(PYTHON_DIR), ROCPROF_TRACE_DECODER_LIB=decoder_lib)
    return env


@pytest.fixture(scope="module")
def builtin_documents(decoder_lib, tmp_path_factory) -> dict[str, dict]:
    """The code document of every code object of EXAMPLES, generated without llvm-objdump."""
    paths = sorted({str(path) for example in EXAMPLES for _, path in code_objects(example)})
    env = without_llvm(tmp_path_factory.mktemp("no-llvm"), decoder_lib)
    generated = subprocess.run([sys.executable, "-c", GENERATE_WITHOUT_LLVM, str(CODE_OBJECT_ID), *paths],
                               capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
    assert generated.returncode == 0, generated.stderr
    return json.loads(generated.stdout)


@pytest.fixture(scope="module")
def objdump():
    try:
        return llvm_objdump()
    except FileNotFoundError:
        missing("llvm-objdump (apt-get install llvm-19 llvm-22), to compare the built-in text with")


def test_the_corpus_has_code_objects_naming_their_target():
    require_corpus()
    assert EXAMPLES, f"no example of {CORPUS} ships a code object that names its target"


def instruction_rows(document: dict) -> list[list]:
    return [row for row in document["code"] if not is_label_text(row[0])]


def same_instruction(builtin: str, llvm: str) -> bool:
    """The built-in text is llvm-objdump's mnemonic, or all of its text when it has operands."""
    return builtin == llvm if len(builtin.split()) > 1 else builtin == llvm.split()[0]


@pytest.mark.parametrize("example", EXAMPLES)
def test_rows_hold_the_corpus_isa_instructions(example, builtin_documents):
    for code_object, path in code_objects(example):
        isa_file = code_object.get("isa_file") or code_object["file"][: -len(".elf")] + ".isa.json"
        expected = load_json(path.parent / isa_file)["instructions"]
        rows = instruction_rows(builtin_documents[str(path)])
        assert [r[5] for r in rows] == sorted(r[5] for r in rows), "rows out of address order"
        text_at = {row[5]: row[0] for row in rows}
        wrong = [(vaddr, text_at.get(vaddr), text) for vaddr, _size, text in expected
                 if vaddr not in text_at or not same_instruction(text_at[vaddr], text)]  # fmt: skip
        assert expected and not wrong, f"{path}: {len(wrong)} of {len(expected)} differ, first {wrong[:3]}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_rows_match_llvm_objdump(example, builtin_documents, objdump):
    for _, path in code_objects(example):
        builtin = builtin_documents[str(path)]
        llvm = generate_code_artifacts([CodeObject(path, CODE_OBJECT_ID)]).code_index.document
        assert {k: v for k, v in builtin.items() if k != "code"} == {k: v for k, v in llvm.items() if k != "code"}
        assert len(builtin["code"]) == len(llvm["code"]), f"{path}: row counts differ"
        for ours, theirs in zip(builtin["code"], llvm["code"]):
            assert ours[1:] == theirs[1:], f"{path}: {ours} against {theirs}"
            if is_label_text(theirs[0]):
                assert ours[0] == theirs[0], f"{path}: {ours} against {theirs}"
            else:
                assert same_instruction(ours[0], theirs[0]), f"{path}: {ours} against {theirs}"


def rocprofv3_captures() -> list[str]:
    """Per target, of the examples whose traces name their code objects by id (code-object markers),
    the one with the least code (the rows of all are checked above; decoding costs time)."""
    smallest: dict[str, tuple[int, str]] = {}
    for example in EXAMPLES:
        objects = code_objects(example)
        if all(o.get("trace_code_object_id") for o, _ in objects):
            with objects[0][1].open("rb") as handle:
                target = ELFFile(handle)["e_flags"] & 0xFF
            size = sum(path.stat().st_size for _, path in objects)
            smallest[target] = min(smallest.get(target, (size, example)), (size, example))
    return sorted(example for _, example in smallest.values())


def test_some_captures_name_their_code_objects_by_id():
    require_corpus()
    assert rocprofv3_captures(), "no example with code objects has code-object markers"


@pytest.mark.decoding
@pytest.mark.parametrize("example", rocprofv3_captures())
def test_rocprof_att_without_llvm_decodes_a_capture_with_its_code_objects(example, decoder_lib, builtin_documents,
                                                                          tmp_path):  # fmt: skip
    capture = tmp_path / "capture"
    capture.mkdir()
    for se, trace in se_files(require_corpus() / example):
        (capture / f"trace_shader_engine_{se}_1.att").symlink_to(trace)
    objects = code_objects(example)
    for code_object, path in objects:
        (capture / f"kernels_code_object_id_{code_object['trace_code_object_id']}.hsaco").symlink_to(path)
    env = without_llvm(tmp_path, decoder_lib)
    result = subprocess.run([sys.executable, "-m", "rocprof_trace_decoder", "--base-name", "att", str(capture)],
                            capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stderr
    run_dir = capture / "ui_output_att1"
    assert result.stdout.split() == [str(run_dir)]

    # The rows are the built-in disassembly's, numbered on over the code objects in file-name order.
    code = json.loads((run_dir / "code.json").read_text())["code"]
    expected_rows = [[text, 0, source, code_object["trace_code_object_id"], vaddr]
                     for code_object, path in sorted(objects, key=lambda o: o[0]["trace_code_object_id"])
                     for text, _, _, source, _, vaddr, *_ in builtin_documents[str(path)]["code"]]  # fmt: skip
    assert [[row[0], row[1], row[3], row[4], row[5]] for row in code] == expected_rows
    assert [row[2] for row in code] == list(range(1, len(code) + 1))
    golden = GoldenRecords(example)
    assert any(golden.instructions()), "the golden holds no instruction"
    line_of_pc = {(row[4], row[5]): row[2] for row in code if not is_label_text(row[0])}
    assert wave_file_problems(run_dir, golden, line_of_pc) == []
    assert statistics_problems(capture, run_dir, golden) == []


# gfx11: s_endpgm; SOPP opcode 127 (no instruction); two zero dwords; s_endpgm; one zero dword
# (v_illegal); s_endpgm.
GFX11_CODE = struct.pack("<7I", 0xBFB00000, 0xBFFF0000, 0, 0, 0xBFB00000, 0, 0xBFB00000)


def test_disassemble_reports_unknown_dwords_without_text(decoder_lib):
    assert disassemble("gfx1100", GFX11_CODE, 0x1000, decoder_lib) == [
        (0x1000, 4, "s_endpgm"), (0x1004, 4, None), (0x1008, 4, "v_illegal"), (0x100C, 4, "v_illegal"),
        (0x1010, 4, "s_endpgm"), (0x1014, 4, "v_illegal"), (0x1018, 4, "s_endpgm")]  # fmt: skip
    with pytest.raises(BuiltinDisassemblyError, match="does not know gfx908"):
        disassemble("gfx908", GFX11_CODE, 0, decoder_lib)
    with pytest.raises(RuntimeError, match="status 3"):
        disassemble("gfx1100", GFX11_CODE[:6], 0, decoder_lib)


def test_listing_is_llvm_objdumps(decoder_lib):
    """As llvm-objdump 19 and 22 list GFX11_CODE: an unknown word as .long, 8 zero bytes skipped ("...")
    but not 4, and a symbol's range on its own (zeros up to the next symbol are skipped only when 8)."""
    listing: list[tuple[int, str]] = []
    disassembler = _Disassembler(decoder_lib, GFX11_CODE)
    _list_symbol_range(disassembler, "gfx1100", 0x100, GFX11_CODE, 0, len(GFX11_CODE), listing)
    assert listing == [(0x100, "s_endpgm"), (0x104, ".long 0xbfff0000"), (0x110, "s_endpgm"), (0x114, "v_illegal"),
                       (0x118, "s_endpgm")]  # fmt: skip
    listing.clear()
    _list_symbol_range(disassembler, "gfx1100", 0x100, GFX11_CODE, 8, 12, listing)
    assert listing == [(0x108, "v_illegal")]


def test_code_objects_of_other_machines_are_refused(decoder_lib):
    with pytest.raises(BuiltinDisassemblyError, match="not an AMDGPU code object"):
        code_object_disassembly(sys.executable, decoder_lib)

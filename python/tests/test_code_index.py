"""CodeIndex statistics and files, checked against hand-computed values."""

from __future__ import annotations

import json

import conftest  # noqa: F401  (puts the package on sys.path)

from rocprof_trace_decoder.code_index import CODE_HEADER, CodeIndex
from rocprof_trace_decoder.records import Instruction, Pc, Wave

A, B, C = Pc(0x100, 1), Pc(0x108, 1), Pc(0x10C, 1)


def document():
    return {
        "code": [
            ["; _kern", 0, 1, "kern", 1, 0x100, 0, 0, 0, 0],
            ["v_mov_b32_e32 v0, 0x12345678", 0, 2, "k.cpp:3", 1, 0x100, 5, 5, 5, 5],
            ["s_nop 0", 0, 3, "", 1, 0x108, 0, 0, 0, 0],
            ["s_endpgm", 0, 4, "", 1, 0x10C, 0, 0, 0, 0],
            ["short row"],
        ],
        "header": CODE_HEADER,
        "kernels": [{"address": 0x100, "codeobj": 1, "name": "kern", "demangled": "kern"}],
    }


def wave(begin, instructions):
    return Wave(0, 0, 0, 0, 0, 0, 0, 0, 64, begin, 1000, [], [Instruction(1, s, d, t, pc) for t, d, s, pc in instructions])


def test_idle_latency_and_stall_rules():
    index = CodeIndex.from_document(document(), load_counts=False)
    # begin 100; (time 110, duration 4, stall 2) -> idle 10, busy until 114;
    # (120, 1, 0) -> idle 6, busy until 121; (130, 1, 0) -> idle 9.
    index.accumulate_wave(wave(100, [(110, 4, 2, A), (120, 1, 0, B), (130, 1, 0, C)]))
    assert index.entries[A].counters() == (1, 4, 2, 10)
    assert index.entries[B].counters() == (1, 1, 0, 6)
    assert index.entries[C].counters() == (1, 1, 0, 9)
    # latency = max(stall, duration); an instruction issued before the previous one ended is not idle;
    # the null PC is skipped without moving the clock.
    index.accumulate_wave(wave(0, [(10, 3, 7, A), (0, 0, 0, Pc(0, 0)), (12, 2, 0, B), (30, 1, 0, C)]))
    assert index.entries[A].counters() == (2, 11, 9, 20)
    assert index.entries[B].counters() == (2, 3, 0, 6)
    assert index.entries[C].counters() == (2, 2, 0, 9 + 13)
    assert Pc(0, 0) not in index.entries


def test_counts_cleared_or_loaded():
    assert CodeIndex.from_document(document()).entries[A].counters() == (5, 5, 5, 5)
    cleared = CodeIndex.from_document(document(), load_counts=False)
    assert cleared.entries[A].counters() == (0, 0, 0, 0)
    assert cleared.document["code"][1][6:] == [0, 0, 0, 0]
    assert document()["code"][1][6:] == [5, 5, 5, 5]  # the caller's document is not touched


def test_memory_sizes_from_address_distances():
    index = CodeIndex.from_document(document())
    assert index.isa_for_pc(A) == ("v_mov_b32_e32 v0, 0x12345678", 8)
    assert index.isa_for_pc(B) == ("s_nop 0", 4)
    assert index.isa_for_pc(C) == ("s_endpgm", 4)
    assert index.isa_for_pc(Pc(0x100, 2)) is None
    index.get_or_create(Pc(0x114, 1))  # a later PC changes the last instruction's size
    assert index.isa_for_pc(C) == ("s_endpgm", 8)


def test_unknown_pcs_get_new_lines_and_rows(tmp_path):
    index = CodeIndex.from_document(document(), load_counts=False)
    unknown = Pc(0x200, 1)
    index.accumulate_wave(wave(0, [(5, 2, 1, unknown), (9, 1, 0, A)]))
    assert index.line_number(unknown) == 5
    index.write_code_json(tmp_path / "code.json")
    text = (tmp_path / "code.json").read_text()
    assert not text.endswith("\n") and text.startswith('{\n  "code": [\n    [\n      "; _kern",')
    rows = json.loads(text)["code"]
    assert rows[-1] == ["", 0, 5, "", 1, 0x200, 1, 2, 1, 5]
    assert rows[1] == ["v_mov_b32_e32 v0, 0x12345678", 0, 2, "k.cpp:3", 1, 0x100, 1, 1, 0, 2]
    assert rows[4] == ["short row"]

    index.write_stats_csv(tmp_path / "stats.csv")
    assert (tmp_path / "stats.csv").read_bytes().decode().split("\r\n") == [
        "CodeObj,Vaddr,Instruction,Hitcount,Latency,Stall,Idle,Source",
        "1,256,; _kern,0,0,0,0,kern",
        '1,256,"v_mov_b32_e32 v0, 0x12345678",1,1,0,2,k.cpp:3',
        "1,264,s_nop 0,0,0,0,0,",
        "1,268,s_endpgm,0,0,0,0,",
        "1,512,,1,2,1,5,",
        "",
    ]


def test_expected_counts_from_control_csvs(tmp_path):
    header = "CodeObj,Vaddr,Instruction,Hitcount,Latency,Stall,Idle,Source\n"
    (tmp_path / "a.csv").write_text(header + "1,0x100,v_mov,2,8,1,3,\n1,256,; _kern,0,0,0,0,kern\n")
    (tmp_path / "b.csv").write_text(header + "1,256,v_mov,1,4,,2,\n1,264,s_nop,1,1,0,0,\n")
    index = CodeIndex.from_stats_csv([tmp_path / "a.csv", tmp_path / "b.csv"])
    assert index.entries[A].expected_counters() == (3, 12, 1, 5)
    assert index.line_number(A) == 1 and index.line_number(B) == 2
    assert index.document == {"code": [], "header": CODE_HEADER}
    index.accumulate_wave(wave(0, [(5, 4, 1, A), (9, 4, 0, A), (20, 4, 0, A), (24, 1, 0, B)]))
    assert index.validate_expected() == [
        "v_mov - PC: 1,256\nHitcount: 3/3, Stall: 1/1, Latency: 12/12, Idle: 12/5"
    ]

"""Hidden latency (PYTHON.md §6.1): which pipes of a SIMD hide which part of an instruction.

The analysis is checked three ways: worked examples whose answers are derived by hand in the
comments, an independent restatement of §6.1 over sets of busy cycles (`SpecModel`) compared with
the analysis on random traces, and invariants over a decoded corpus capture.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import load_golden, records_from_golden, reference_code_json, se_files

from rocprof_trace_decoder import (
    CodeEntry,
    CodeIndex,
    HiddenLatency,
    InstCategory,
    Instruction,
    OtherSimdInstruction,
    Pc,
    TraceRecords,
    Wave,
    analyze_hidden_latency,
)
from rocprof_trace_decoder.analysis.hidden_latency import (
    _build_pipe_utilization,
    _compute_union,
    _compute_util,
    _index_util,
    _indexed_interval,
)

C = InstCategory
VECTOR_MEMORY = (C.VMEM, C.FLAT, C.LDS)
SCALAR = (C.SALU, C.SMEM)
UNPIPED = (C.NONE, C.JUMP, C.NEXT, C.IMMED, C.CONTEXT, C.MESSAGE, C.BVH)

# Disassembly of our own choosing: matrix ops by their mnemonic prefix, and look-alikes that are not.
MATRIX_TEXTS = [
    "v_mfma_f32_32x32x8_f16 v[0:15], v[16:17], v[18:19], v[0:15]",
    "v_smfmac_f32_16x16x32_bf16 v[20:23], v[24:25], v[26:29], v30",
    "v_wmma_i32_16x16x16_iu8 v[8:15], v[0:3], v[4:7], v[8:15]",
    "v_swmmac_f16_16x16x32_f16 v[40:43], v[44:47], v[48:55], v56",
]
PLAIN_TEXTS = [
    "v_fma_f32 v3, v4, v5, v6",
    "v_mul_lo_u32 v9, v10, v11",
    "s_cmp_lg_u32 s6, 0",
    "global_load_b128 v[12:15], v2, s[4:5]",
]


def op(address: int, category: InstCategory, at: int, lasting: int, stalled: int = 0) -> Instruction:
    """An instruction of code object 3 issued at `at`, stalled for `stalled` cycles, `lasting` in all."""
    return Instruction(int(category), stalled, lasting, at, Pc(address, 3))


def wave(*instructions: Instruction, simd: int = 0, begin: int | None = None) -> Wave:
    if begin is None:
        begin = min((i.time for i in instructions), default=0)
    end = max((i.time + max(i.stall, i.duration) for i in instructions), default=begin)
    return Wave(2, simd, 5, 0, 0, 0, 0, 0, 0, begin, end, [], list(instructions))


def hidden(*waves: Wave, other_simd=(), code_index=None, se: int = 1):
    records = {se: TraceRecords(waves=list(waves), other_simd=list(other_simd))}
    return analyze_hidden_latency(records, code_index=code_index).by_pc


def code_index(texts: dict[int, str]) -> CodeIndex:
    return CodeIndex([CodeEntry(Pc(address, 3), text, line) for line, (address, text) in enumerate(texts.items(), 1)])


# --- an independent restatement of §6.1 --------------------------------------------------------


def busy_cycles(pieces) -> set[int]:
    """A pipe works through its (start, length) pieces in order of start, one at a time: a piece
    arriving while the pipe is busy waits for it (§6.1: merged work adds its full length)."""
    busy, free_at = set(), None
    for start, length in sorted(pieces):
        begin = start if free_at is None else max(start, free_at)
        busy.update(range(begin, begin + length))
        free_at = begin + length
    return busy


def overlap(busy: set[int], begin: int, end: int) -> int:
    return sum(1 for cycle in range(begin, end) if cycle in busy)


class SpecModel:
    """§6.1 over explicit sets of busy cycles: slow, and with no interval arithmetic to get wrong."""

    def __init__(self, records_by_se, texts: dict[Pc, str]):
        prefixes = ("v_mfma", "v_smfma", "v_wmma", "v_swmma")
        self.matrix = {pc for pc, text in texts.items() if text.startswith(prefixes)}
        self.by_pc: dict[Pc, HiddenLatency] = {}
        self.by_scope: dict[tuple[int, int], dict[Pc, HiddenLatency]] = {}
        for se, records in records_by_se.items():
            for simd in {w.simd for w in records.waves}:
                self._simd(se, simd, [w for w in records.waves if w.simd == simd], records.other_simd)

    def _simd(self, se, simd, waves, other_simd):
        pieces = {"wmma": [], "valu": [], "vmem": [], "scalar": []}
        for one in waves:
            for i in one.instructions:
                start, length = i.time + i.stall, max(i.stall, i.duration) - i.stall
                if i.pc in self.matrix:
                    pieces["wmma"].append((start, length))
                    pieces["valu"].append((start, length * 3 // 4))
                elif i.category == C.VALU:
                    pieces["valu"].append((start, length))
                elif i.category in VECTOR_MEMORY:
                    pieces["vmem"].append((start, length))
                elif i.category in SCALAR:
                    pieces["scalar"].append((start, length))
        pieces["vmem"] += [(o.time, o.cycles) for o in other_simd if o.cycles > 0]
        busy = {pipe: busy_cycles(work) for pipe, work in pieces.items()}
        math = busy["valu"] | busy["wmma"]
        vector = math | busy["vmem"]
        everything = vector | busy["scalar"]
        scope = self.by_scope.setdefault((se, simd), {})
        for one in waves:
            previous_end = one.begin_time
            for i in one.instructions:
                cycles = max(i.stall, i.duration)
                windows = ((previous_end, i.time), (i.time, i.time + i.stall), (i.time + i.stall, i.time + cycles))
                previous_end = i.time + cycles

                def full(cycles_busy):
                    return [overlap(cycles_busy, begin, end) for begin, end in windows]

                def own(cycles_busy):  # an instruction's own pipe never hides its issue
                    return full(cycles_busy)[:2] + [0]

                def better(first, second):  # the first named wins a tie
                    return first if sum(first) >= sum(second) else second

                if i.pc in self.matrix:
                    parts = better(own(busy["valu"]), own(busy["wmma"]))
                elif i.category == C.VALU:
                    parts = better(own(busy["valu"]), full(busy["wmma"]))
                elif i.category in VECTOR_MEMORY:
                    parts = better(full(math), own(busy["vmem"]))
                elif i.category in SCALAR:
                    parts = better(full(vector), own(busy["scalar"]))
                else:
                    parts = full(everything)
                if i.pc == Pc(0, 0):
                    continue
                for totals in (scope, self.by_pc):
                    totals.setdefault(i.pc, HiddenLatency())
                    totals[i.pc] += HiddenLatency(*parts)


# --- pipe arithmetic, worked by hand -------------------------------------------------------------


def test_work_arriving_at_a_busy_pipe_queues_behind_it():
    # (5, 4) runs [5, 9); (7, 6) arrives at 7 and runs [9, 15); (30, 1) finds the pipe idle;
    # (31, 2) arrives exactly when it frees up: [31, 33). Input order does not matter.
    assert _compute_util([(31, 2), (7, 6), (30, 1), (5, 4)]) == [(15, 10), (33, 3)]
    assert _compute_util([]) == []


def test_pipes_combine_as_a_union_of_cycles():
    # [8, 12) | [4, 10) | [18, 20): the first two overlap into [4, 12).
    assert _compute_union([(12, 4)], [(10, 6), (20, 2)]) == [(12, 8), (20, 2)]
    # A stretch inside another adds nothing.
    assert _compute_union([(50, 40)], [(30, 5)]) == [(50, 40)]


def test_busy_cycles_of_an_idle_gap_a_stall_and_an_issue():
    # Busy [6, 9) and [15, 20). Idle gap [7, 16): 7, 8 and 15. Stall [16, 18): both. Issue
    # [18, 22): 18 and 19.
    assert _indexed_interval(_index_util([(9, 3), (20, 5)]), 7, 16, 2, 6) == (3, 2, 2)
    # An instruction issued before the previous one ended has no idle gap; its issue [16, 18) is
    # covered.
    assert _indexed_interval(_index_util([(9, 3), (20, 5)]), 19, 16, 0, 2) == (0, 0, 2)


def test_matrix_work_fills_its_pipe_and_three_quarters_of_the_valu():
    # Stalled 2 of 10 cycles: 8 busy cycles from cycle 6 on the matrix pipe, 6 on the VALU. A
    # 7-cycle matrix op keeps the VALU busy for 5 (three quarters, rounded down).
    long_one, short_one = op(0x100, C.VALU, 4, 10, stalled=2), op(0x200, C.VALU, 40, 7)
    matrix_pcs = {long_one.pc, short_one.pc}
    wmma, valu, vmem, scalar = _build_pipe_utilization([wave(long_one, short_one)], [], matrix_pcs)
    assert (wmma, valu, vmem, scalar) == ([(14, 8), (47, 7)], [(12, 6), (45, 5)], [], [])


def test_other_simd_records_keep_vector_memory_busy():
    others = [OtherSimdInstruction(0, 30, 3, 0, int(C.LDS)), OtherSimdInstruction(0, 60, 0, 0, int(C.VMEM))]
    assert _build_pipe_utilization([], others, set()) == ([], [], [(33, 3)], [])


# --- which pipe hides what, worked by hand --------------------------------------------------------


def test_a_valu_op_waiting_for_the_valu_has_its_wait_hidden_but_not_its_issue():
    # The other wave keeps the VALU busy over [12, 26), and the target's own work queues behind
    # it. The target's wave starts at 15: idle [15, 20) all busy, stall [20, 23) all busy.
    target = op(0x10, C.VALU, 20, 9, stalled=3)
    assert hidden(wave(target, begin=15), wave(op(0x14, C.VALU, 12, 14)))[target.pc] == HiddenLatency(5, 3, 0)


def test_a_valu_op_issued_under_a_matrix_op_is_hidden_by_the_matrix_pipe():
    # The matrix op keeps the matrix pipe busy over [0, 16) and the VALU over [0, 12). The VALU op
    # issues over [13, 16): its own pipe cannot hide that, the matrix pipe hides all of it.
    matrix, target = op(0x20, C.VALU, 0, 16), op(0x24, C.VALU, 13, 3)
    index = code_index({0x20: MATRIX_TEXTS[0], 0x24: PLAIN_TEXTS[0]})
    assert hidden(wave(matrix), wave(target), code_index=index)[target.pc] == HiddenLatency(issue=3)


def test_a_matrix_op_never_has_its_issue_hidden():
    # A plain VALU op over [0, 30) covers the matrix op's idle gap [2, 9) and stall [9, 13) but
    # its issue only counts against the VALU and matrix pipes, which never hide it.
    matrix = op(0x30, C.VALU, 9, 10, stalled=4)
    index = code_index({0x30: MATRIX_TEXTS[2], 0x34: PLAIN_TEXTS[1]})
    result = hidden(wave(matrix, begin=2), wave(op(0x34, C.VALU, 0, 30)), code_index=index)
    assert result[matrix.pc] == HiddenLatency(idle=7, stall=4)


@pytest.mark.parametrize("category", VECTOR_MEMORY)
def test_vector_memory_issue_is_hidden_by_math_not_by_other_memory(category):
    # The target issues over [40, 52); a VALU op busy over [44, 49) hides 5 of it; a load of the
    # same pipe over [40, 46) hides none (the target queues behind it instead).
    target = op(0x40, category, 40, 12)
    assert hidden(wave(target), wave(op(0x44, C.VALU, 44, 5)))[target.pc] == HiddenLatency(issue=5)
    assert hidden(wave(target), wave(op(0x48, C.VMEM, 40, 6)))[target.pc] == HiddenLatency()


@pytest.mark.parametrize("busy_category", [*VECTOR_MEMORY, C.VALU])
@pytest.mark.parametrize("category", SCALAR)
def test_scalar_issue_is_hidden_by_any_vector_pipe(category, busy_category):
    # The target issues over [3, 10); the vector op is busy over [0, 5).
    target = op(0x50, category, 3, 7)
    assert hidden(wave(target), wave(op(0x54, busy_category, 0, 5)))[target.pc] == HiddenLatency(issue=2)


def test_a_scalar_op_waiting_for_the_scalar_pipe():
    # The other wave's SALU op runs [0, 10); the target's own work [8, 11) queues to [10, 13).
    # Idle [0, 6) and stall [6, 8) are hidden, the issue is not.
    target = op(0x60, C.SMEM, 6, 5, stalled=2)
    assert hidden(wave(target, begin=0), wave(op(0x64, C.SALU, 0, 10)))[target.pc] == HiddenLatency(6, 2, 0)


@pytest.mark.parametrize("busy_category", [C.VALU, C.FLAT, C.SMEM])
@pytest.mark.parametrize("category", UNPIPED)
def test_instructions_of_no_pipe_are_hidden_by_every_pipe(category, busy_category):
    # The target issues over [10, 14); the busy op covers [8, 12).
    target = op(0x70, category, 10, 4)
    assert hidden(wave(target), wave(op(0x74, busy_category, 8, 4)))[target.pc] == HiddenLatency(issue=2)


def test_other_simd_memory_work_hides_a_branch_but_not_a_valu_op():
    # Vector memory of other SIMDs over [100, 104) counts for this SIMD's memory pipe: the branch
    # issued over [101, 103) is hidden, the VALU op over [101, 103) is not (memory never hides it).
    branch, math = op(0x80, C.JUMP, 101, 2), op(0x84, C.VALU, 101, 2)
    memory = [OtherSimdInstruction(0, 100, 4, 1, int(C.FLAT)), OtherSimdInstruction(0, 100, -2, 1, int(C.FLAT))]
    result = hidden(wave(branch), wave(math, simd=1), other_simd=memory)
    assert result[branch.pc] == HiddenLatency(issue=2)
    assert result[math.pc] == HiddenLatency()


def test_the_idle_gap_runs_from_the_latest_end_so_far():
    # The first op ends at 20 (its stall outlasts its duration); the target at 26 has an idle
    # gap [20, 26), of which the VALU busy over [18, 24) covers 4.
    first, target = op(0x90, C.NEXT, 10, 6, stalled=10), op(0x94, C.MESSAGE, 26, 1)
    result = hidden(wave(first, target), wave(op(0x98, C.VALU, 18, 6)))
    assert result[target.pc] == HiddenLatency(idle=4)


def test_unresolved_instructions_still_hide_others():
    # An instruction with no PC is not reported, but its VALU work over [0, 8) hides the
    # IMMED issued over [5, 9).
    unresolved = Instruction(int(C.VALU), 0, 8, 0, Pc(0, 0))
    target = op(0xA0, C.IMMED, 5, 4)
    result = hidden(wave(unresolved), wave(target))
    assert Pc(0, 0) not in result and result[target.pc] == HiddenLatency(issue=3)


def test_scopes_are_shader_engine_and_simd_and_a_pc_sums_over_them():
    # The same loop body runs on SIMD 0 and SIMD 3 of SE 4 and on SIMD 3 of SE 6, each beside a
    # VALU op covering 2 of its 3 issue cycles; on SIMD 3 of SE 6 the VALU op runs on SIMD 1.
    def pair(simd: int, busy_simd: int) -> list[Wave]:
        return [wave(op(0xB0, C.IMMED, 50, 3), simd=simd), wave(op(0xB4, C.VALU, 51, 4), simd=busy_simd)]

    records = {4: TraceRecords(waves=pair(0, 0) + pair(3, 3)), 6: TraceRecords(waves=pair(3, 1))}
    result = analyze_hidden_latency(records)
    assert set(result.by_scope) == {(4, 0), (4, 3), (6, 3), (6, 1)}
    loop = Pc(0xB0, 3)
    assert [result.by_scope[scope][loop].issue for scope in ((4, 0), (4, 3), (6, 3))] == [2, 2, 0]
    assert result.by_pc[loop] == HiddenLatency(issue=4) and result.by_pc[loop].total() == 4


def test_hidden_latency_accumulates_in_place():
    total = HiddenLatency(idle=3)
    same = total
    total += HiddenLatency(stall=4, issue=5)
    assert same is total and total == HiddenLatency(3, 4, 5) and total.total() == 12


# --- the analysis against the restated rules ---------------------------------------------------


def random_simd_traces(randomizer: random.Random, texts: dict[int, str]) -> dict[int, TraceRecords]:
    categories = list(C)[:-1]  # every category but LAST
    records = {}
    for se in randomizer.sample(range(8), randomizer.randrange(1, 3)):
        waves = []
        for _ in range(randomizer.randrange(1, 5)):
            clock = randomizer.randrange(0, 40)
            begin = max(clock - randomizer.randrange(0, 6), 0)
            instructions = []
            for _ in range(randomizer.randrange(1, 8)):
                address = randomizer.choice(list(texts))
                lasting = randomizer.randrange(0, 24)
                stalled = randomizer.randrange(0, lasting + 3)  # now and then longer than it lasts
                instructions.append(op(address, randomizer.choice(categories), clock, lasting, stalled))
                clock += randomizer.randrange(0, 16)  # often before the previous one ended
            if randomizer.random() < 0.1:
                instructions.append(Instruction(int(C.VALU), 0, 6, clock, Pc(0, 0)))
            waves.append(wave(*instructions, simd=randomizer.randrange(0, 3), begin=begin))
        others = [OtherSimdInstruction(0, randomizer.randrange(0, 120), randomizer.randrange(-2, 12), 0,
                                       int(randomizer.choice(VECTOR_MEMORY)))
                  for _ in range(randomizer.randrange(0, 4))]  # fmt: skip
        records[se] = TraceRecords(waves=waves, other_simd=others)
    return records


def test_analysis_agrees_with_the_restated_rules_on_random_traces():
    randomizer = random.Random(20)
    for trial in range(400):
        texts = {0x1000 + 4 * n: randomizer.choice(MATRIX_TEXTS + PLAIN_TEXTS) for n in range(6)}
        records = random_simd_traces(randomizer, texts)
        index = code_index(texts) if trial % 4 else None
        model = SpecModel(records, {Pc(address, 3): text for address, text in texts.items()} if index else {})
        result = analyze_hidden_latency(records, code_index=index)
        assert result.by_pc == model.by_pc, trial
        assert result.by_scope == model.by_scope, trial


def test_the_model_is_not_vacuous():
    # Spot checks of the model itself, so that agreeing with it means something.
    assert busy_cycles([(3, 2), (4, 3), (20, 0)]) == {3, 4, 5, 6, 7}
    assert overlap({1, 2, 5}, 0, 5) == 2
    target = op(0x10, C.SALU, 10, 6, stalled=1)
    model = SpecModel({0: TraceRecords(waves=[wave(target, begin=7), wave(op(0x14, C.LDS, 6, 8))])}, {})
    # LDS busy [6, 14): idle [7, 10) 3, stall [10, 11) 1, issue [11, 16) 3 through the vector pipes.
    assert model.by_pc[target.pc] == HiddenLatency(3, 1, 3)


# --- a decoded capture ---------------------------------------------------------------------------


def test_a_decoded_capture(corpus):
    """Over the waves of a real gfx11 gemm capture: every executed PC is reported, the scopes add
    up to the per-PC totals, something is hidden, and no part exceeds what the instructions spent."""
    example = "gfx1100/profile_gemm_run_0"
    per_se = {entry["input"][0]: entry["callbacks"] for entry in load_golden(example)["per_se"]}
    records = {se: records_from_golden(per_se[path.name]) for se, path in se_files(corpus / example)}
    result = analyze_hidden_latency(records, code_index=CodeIndex.from_document(reference_code_json(corpus / example)))

    spent = {part: Counter() for part in ("idle", "stall", "issue")}
    for shader_engine in records.values():
        for one in shader_engine.waves:
            previous_end = one.begin_time
            for i in one.instructions:
                cycles = max(i.stall, i.duration)
                spent["idle"][i.pc] += max(i.time - previous_end, 0)
                spent["stall"][i.pc] += i.stall
                spent["issue"][i.pc] += cycles - i.stall
                previous_end = i.time + cycles
    assert set(result.by_pc) == set(spent["stall"]) - {Pc(0, 0)}
    summed: dict[Pc, HiddenLatency] = {}
    for scope in result.by_scope.values():
        for pc, part in scope.items():
            summed.setdefault(pc, HiddenLatency())
            summed[pc] += part
    assert summed == result.by_pc
    assert sum(h.total() for h in result.by_pc.values()) > 0
    for pc, part in result.by_pc.items():
        assert part.idle <= spent["idle"][pc] and part.stall <= spent["stall"][pc]
        assert part.issue <= spent["issue"][pc]

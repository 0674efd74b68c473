"""Hidden-latency analysis: interval arithmetic and which pipes may hide which instruction."""

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
    _matrix_instruction_pcs,
)

OTHER_CATEGORIES = [InstCategory.NONE, InstCategory.JUMP, InstCategory.NEXT, InstCategory.IMMED,
                    InstCategory.CONTEXT, InstCategory.MESSAGE, InstCategory.BVH]  # fmt: skip


def inst(address: int, category: InstCategory, *, time: int, duration: int, stall: int = 0) -> Instruction:
    return Instruction(int(category), stall, duration, time, Pc(address, 1))


def wave(*instructions: Instruction, simd: int = 0, begin: int = 0) -> Wave:
    end = max((i.time + i.duration for i in instructions), default=begin)
    return Wave(1, simd, 0, 0, 0, 0, 0, 0, 0, begin, end, [], list(instructions))


def analyse(*waves: Wave, se: int = 0, **kwargs):
    return analyze_hidden_latency({se: TraceRecords(waves=list(waves))}, **kwargs)


def covered_by_brute_force(intervals: list[tuple[int, int]], begin: int, length: int) -> int:
    busy = set()
    for end, duration in intervals:
        busy.update(range(end - duration, end))
    return len(busy & set(range(begin, begin + length)))


# --- intervals


def test_pipe_work_queues_behind_overlapping_work():
    assert _compute_util([(0, 10), (2, 3), (20, 2)]) == [(13, 13), (22, 2)]
    assert _compute_util([(0, 10), (2, 3), (12, 1)]) == [(14, 14)]  # the queue keeps growing


def test_union_of_pipes_is_a_set_union():
    assert _compute_union([(10, 10)], [(15, 10), (30, 5)]) == [(15, 15), (30, 5)]
    assert _compute_union([(20, 20)], [(10, 5)]) == [(20, 20)]
    assert _compute_union([], [(3, 1)]) == [(3, 1)]


def test_idle_stall_and_issue_windows():
    index = _index_util([(20, 20)])  # busy [0, 20)
    assert _indexed_interval(index, 0, 5, 5, 10) == (5, 5, 5)
    assert _indexed_interval(index, 18, 25, 0, 4) == (2, 0, 0)
    assert _indexed_interval(index, 30, 25, 0, 4) == (0, 0, 0)  # an instruction issued before the last one ended


def test_indexed_overlap_equals_brute_force():
    randomizer = random.Random(7)
    for _ in range(300):
        intervals = _compute_util((randomizer.randrange(0, 200), randomizer.randrange(0, 32))
                                  for _ in range(randomizer.randrange(1, 20)))  # fmt: skip
        last_time = randomizer.randrange(0, 100)
        clock = randomizer.randrange(last_time, 201)
        cycles = randomizer.randrange(1, 32)
        stall = randomizer.randrange(0, cycles + 1)
        expected = (covered_by_brute_force(intervals, last_time, clock - last_time),
                    covered_by_brute_force(intervals, clock, stall),
                    covered_by_brute_force(intervals, clock + stall, cycles - stall))  # fmt: skip
        assert _indexed_interval(_index_util(intervals), last_time, clock, stall, cycles) == expected


def test_matrix_instructions_fill_the_matrix_pipe_and_three_quarters_of_the_valu():
    matrix = inst(1, InstCategory.VALU, time=0, duration=8)
    index = CodeIndex([CodeEntry(matrix.pc, "v_wmma_f32_16x16x16_f16 v0, v1, v2", 1)])
    wmma, valu, vmem, scalar = _build_pipe_utilization([wave(matrix)], [], _matrix_instruction_pcs(index))
    assert (wmma, valu, vmem, scalar) == ([(8, 8)], [(6, 6)], [], [])


def test_matrix_prefixes():
    texts = ["v_mfma_x", "v_smfma_x", "v_wmma_x", "v_swmma_x", "v_mov_b32 v0, v1", "s_wmma"]
    index = CodeIndex([CodeEntry(Pc(n, 1), text, n) for n, text in enumerate(texts, 1)])
    assert _matrix_instruction_pcs(index) == {Pc(n, 1) for n in range(1, 5)}
    assert _matrix_instruction_pcs(None) == set()


# --- which pipe hides what


def test_own_pipe_hides_idle_and_stall_but_not_valu_issue():
    target = inst(1, InstCategory.VALU, time=10, stall=4, duration=10)
    busy = inst(2, InstCategory.VALU, time=0, duration=14)
    assert analyse(wave(target), wave(busy)).by_pc[target.pc] == HiddenLatency(idle=10, stall=4, issue=0)


@pytest.mark.parametrize("category", [InstCategory.VMEM, InstCategory.LDS, InstCategory.FLAT, InstCategory.SALU,
                                      InstCategory.SMEM])  # fmt: skip
def test_own_pipe_never_hides_issue(category):
    target = inst(1, category, time=0, duration=6)
    busy = inst(2, category, time=0, duration=6)
    assert analyse(wave(target), wave(busy)).by_pc[target.pc] == HiddenLatency()


def test_math_pipes_hide_vector_memory_issue():
    target = inst(1, InstCategory.VMEM, time=10, stall=4, duration=10)
    busy = inst(2, InstCategory.VALU, time=14, duration=6)
    assert analyse(wave(target), wave(busy)).by_pc[target.pc] == HiddenLatency(issue=6)


@pytest.mark.parametrize("category", [InstCategory.VMEM, InstCategory.LDS, InstCategory.FLAT])
def test_vector_pipes_hide_scalar_issue(category):
    target = inst(1, InstCategory.SALU, time=10, stall=4, duration=10)
    busy = inst(2, category, time=14, duration=6)
    assert analyse(wave(target), wave(busy)).by_pc[target.pc] == HiddenLatency(issue=6)


@pytest.mark.parametrize("category", OTHER_CATEGORIES)
def test_any_busy_pipe_hides_other_instructions(category):
    target = inst(1, category, time=10, stall=4, duration=10)
    busy = inst(2, InstCategory.SMEM, time=14, duration=6)
    assert analyse(wave(target), wave(busy)).by_pc[target.pc] == HiddenLatency(issue=6)


def test_matrix_work_hides_scalar_issue():
    matrix = inst(1, InstCategory.VALU, time=0, duration=8)
    scalar = inst(2, InstCategory.SALU, time=0, duration=8)
    index = CodeIndex([CodeEntry(matrix.pc, "v_mfma_f32_16x16x16f16 v[0:3], v0, v1, v[0:3]", 1),
                       CodeEntry(scalar.pc, "s_add_u32 s0, s0, 1", 2)])  # fmt: skip
    assert analyse(wave(matrix), wave(scalar), code_index=index).by_pc[scalar.pc] == HiddenLatency(issue=8)


def test_matrix_issue_is_never_hidden():
    matrix = inst(1, InstCategory.VALU, time=10, stall=2, duration=8)
    busy = inst(2, InstCategory.VALU, time=0, duration=20)
    index = CodeIndex([CodeEntry(matrix.pc, "v_mfma_f32_4x4x1f32 v[0:3], v0, v1, v[0:3]", 1)])
    assert analyse(wave(matrix), wave(busy), code_index=index).by_pc[matrix.pc] == HiddenLatency(idle=10, stall=2)


# --- scopes and accumulation


def test_results_per_shader_engine_and_simd():
    records = {2: TraceRecords(waves=[wave(inst(1, InstCategory.IMMED, time=0, duration=4), simd=1)]),
               3: TraceRecords(waves=[wave(inst(1, InstCategory.IMMED, time=0, duration=4), simd=2)])}  # fmt: skip
    result = analyze_hidden_latency(records)
    assert set(result.by_scope) == {(2, 1), (3, 2)}
    assert result.by_pc == {Pc(1, 1): HiddenLatency()}


def test_another_simd_hides_nothing():
    target = inst(1, InstCategory.IMMED, time=0, duration=4)
    busy = inst(2, InstCategory.VALU, time=0, duration=4)
    assert analyse(wave(target, simd=0), wave(busy, simd=1)).by_pc[target.pc] == HiddenLatency()


@pytest.mark.parametrize("cycles, hidden", [(4, 4), (0, 0), (-1, 0)])
def test_other_simd_memory_work_hides_issue(cycles, hidden):
    target = inst(1, InstCategory.IMMED, time=0, duration=4)
    other = OtherSimdInstruction(0, 0, cycles, 1, int(InstCategory.VMEM))
    result = analyze_hidden_latency({0: TraceRecords(waves=[wave(target)], other_simd=[other])})
    assert result.by_pc[target.pc] == HiddenLatency(issue=hidden)


def test_same_pc_sums_over_scopes():
    records = {se: TraceRecords(waves=[wave(inst(1, InstCategory.IMMED, time=0, duration=4)),
                                       wave(inst(2, InstCategory.VALU, time=0, duration=4))])
               for se in (0, 1)}  # fmt: skip
    result = analyze_hidden_latency(records)
    assert result.by_scope[0, 0][Pc(1, 1)] == result.by_scope[1, 0][Pc(1, 1)] == HiddenLatency(issue=4)
    assert result.by_pc[Pc(1, 1)] == HiddenLatency(issue=8)
    assert result.by_pc[Pc(1, 1)].total() == 8


def test_idle_gap_starts_where_the_previous_instruction_ended():
    first = inst(1, InstCategory.IMMED, time=0, duration=10)
    overlapping = inst(2, InstCategory.IMMED, time=2, duration=2)  # ends at 4, before the first one
    target = inst(3, InstCategory.IMMED, time=8, duration=2)
    busy = inst(4, InstCategory.VALU, time=4, duration=4)
    assert analyse(wave(first, overlapping, target), wave(busy)).by_pc[target.pc] == HiddenLatency(idle=4)


def test_hidden_stall_and_issue_never_exceed_the_instruction():
    randomizer = random.Random(3)
    categories = [InstCategory.VALU, InstCategory.VMEM, InstCategory.LDS, InstCategory.SALU, InstCategory.SMEM,
                  InstCategory.IMMED]  # fmt: skip
    for _ in range(64):
        waves, stall, issue = [], {}, {}
        for _ in range(3):
            clock, instructions = randomizer.randrange(0, 10), []
            for _ in range(6):
                duration = randomizer.randrange(1, 30)
                one = inst(randomizer.randrange(1, 4), randomizer.choice(categories), time=clock, duration=duration,
                           stall=randomizer.randrange(0, duration))  # fmt: skip
                instructions.append(one)
                stall[one.pc] = stall.get(one.pc, 0) + one.stall
                issue[one.pc] = issue.get(one.pc, 0) + one.duration - one.stall
                clock += randomizer.randrange(0, 20)  # often less than the duration: same-pipe work overlaps
            waves.append(wave(*instructions))
        for pc, hidden in analyse(*waves).by_pc.items():
            assert hidden.stall <= stall[pc] and hidden.issue <= issue[pc]


def test_null_pc_is_not_counted():
    unresolved = Instruction(int(InstCategory.IMMED), 0, 4, 0, Pc(0, 0))
    assert Pc(0, 0) not in analyse(wave(unresolved)).by_pc


def test_hidden_latency_adds_in_place():
    total = HiddenLatency(1, 2, 3)
    alias = total
    total += HiddenLatency(10, 20, 30)
    assert alias == HiddenLatency(11, 22, 33) and alias is total


def test_a_real_capture(corpus):
    """Over a decoded gemm kernel: every executed PC is reported, scopes add up to the per-PC
    totals, and no component exceeds what the instructions spent."""
    example = "gfx1100/profile_gemm_run_0"
    per_se = {entry["input"][0]: entry["callbacks"] for entry in load_golden(example)["per_se"]}
    records = {se: records_from_golden(per_se[path.name]) for se, path in se_files(corpus / example)}
    result = analyze_hidden_latency(records, code_index=CodeIndex.from_document(reference_code_json(corpus / example)))

    spent = {part: Counter() for part in ("idle", "stall", "issue")}
    for shader_engine in records.values():
        for one in shader_engine.waves:
            last_time = one.begin_time
            for i in one.instructions:
                cycles = max(i.stall, i.duration)
                spent["idle"][i.pc] += max(i.time - last_time, 0)
                spent["stall"][i.pc] += i.stall
                spent["issue"][i.pc] += cycles - i.stall
                last_time = i.time + cycles
    assert set(result.by_pc) == set(spent["stall"]) - {Pc(0, 0)}
    summed: dict[Pc, HiddenLatency] = {}
    for scope in result.by_scope.values():
        for pc, hidden in scope.items():
            total = summed.setdefault(pc, HiddenLatency())
            total += hidden
    assert summed == result.by_pc
    assert sum(h.total() for h in result.by_pc.values()) > 0
    for pc, hidden in result.by_pc.items():
        assert hidden.idle <= spent["idle"][pc] and hidden.stall <= spent["stall"][pc]
        assert hidden.issue <= spent["issue"][pc]

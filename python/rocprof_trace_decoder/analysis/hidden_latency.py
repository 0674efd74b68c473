"""Hidden latency: how many cycles of an instruction's idle gap, stall and issue overlapped with
other work on the same SIMD, i.e. were hidden behind it.

Per (shader engine, SIMD) the busy time of four pipes is collected from every wave's
instructions (and, for vector memory, the other-SIMD records of the shader engine). Each
instruction is then compared with the pipes that can hide it: its own pipe hides its idle and
stall time but never its issue, a "higher" pipe hides all three.

Utilisation lists hold ``(end, duration)`` pairs, sorted and disjoint: interval
``[end - duration, end)``. Coalescing a pipe adds the full length of overlapping work, so a
busy pipe's interval can end later than wall time would say; unions of pipes are true unions.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..code_index import CodeIndex
from ..records import InstCategory, OtherSimdInstruction, Pc, TraceRecords, Wave

__all__ = ["HiddenLatency", "HiddenLatencyResult", "analyze_hidden_latency"]

MATRIX_PREFIXES = ("v_mfma", "v_smfma", "v_wmma", "v_swmma")
_VECTOR_MEMORY = {InstCategory.VMEM, InstCategory.FLAT, InstCategory.LDS}
_SCALAR = {InstCategory.SALU, InstCategory.SMEM}
_NULL_PC = Pc(0, 0)

Utilization = list[tuple[int, int]]  # (end, duration)


@dataclass
class HiddenLatency:
    idle: int = 0
    stall: int = 0
    issue: int = 0

    def total(self) -> int:
        return self.idle + self.stall + self.issue

    def __iadd__(self, other: HiddenLatency) -> HiddenLatency:
        self.idle += other.idle
        self.stall += other.stall
        self.issue += other.issue
        return self


@dataclass
class HiddenLatencyResult:
    by_pc: dict[Pc, HiddenLatency] = field(default_factory=dict)
    by_scope: dict[tuple[int, int], dict[Pc, HiddenLatency]] = field(default_factory=dict)  # (se, simd) -> pc


# --- utilisation intervals -------------------------------------------------------------------


def _compute_util(work: Iterable[tuple[int, int]]) -> Utilization:
    """(start, length) pieces of one pipe -> coalesced (end, duration): work that starts before the
    current interval ends queues behind it, so its whole length is added."""
    merged: Utilization = []
    start = end = 0
    for piece_start, length in sorted(work):
        if merged and piece_start <= end:
            end += length
            merged[-1] = (end, end - start)
        else:
            start, end = piece_start, piece_start + length
            merged.append((end, length))
    return merged


def _compute_union(first: Utilization, second: Utilization) -> Utilization:
    """The cycles covered by either list."""
    union: Utilization = []
    for start, end in sorted((end - duration, end) for end, duration in (*first, *second)):
        if union and start <= union[-1][0]:
            if end > union[-1][0]:
                previous_end, previous_duration = union[-1]
                union[-1] = (end, previous_duration + end - previous_end)
        else:
            union.append((end, end - start))
    return union


@dataclass(frozen=True)
class _UtilIndex:
    """Sorted, disjoint intervals with the cycles covered before each, for O(log n) overlap queries."""

    starts: list[int]
    ends: list[int]
    covered_before: list[int]

    def covered_until(self, time: int) -> int:
        """Busy cycles before ``time``."""
        position = bisect_right(self.starts, time) - 1
        if position < 0:
            return 0
        return self.covered_before[position] + min(time, self.ends[position]) - self.starts[position]


def _index_util(intervals: Utilization) -> _UtilIndex:
    starts, ends, covered_before = [], [], []
    total = 0
    for end, duration in intervals:
        starts.append(end - duration)
        ends.append(end)
        covered_before.append(total)
        total += duration
    return _UtilIndex(starts, ends, covered_before)


def _indexed_interval(index: _UtilIndex, last_time: int, clock: int, stall: int, cycles: int) -> tuple[int, int, int]:
    """Busy cycles of ``index`` during an instruction's idle gap [last_time, clock), its stall
    [clock, clock + stall) and its issue [clock + stall, clock + cycles)."""
    covered_until = index.covered_until
    at_clock = covered_until(clock)
    at_issue = covered_until(clock + stall) if stall > 0 else at_clock
    return (
        at_clock - covered_until(last_time) if clock > last_time else 0,
        at_issue - at_clock,
        covered_until(clock + cycles) - at_issue if cycles > stall else 0,
    )


# --- pipes -----------------------------------------------------------------------------------


def _matrix_instruction_pcs(code_index: CodeIndex | None) -> set[Pc]:
    if code_index is None:
        return set()
    return {pc for pc, entry in code_index.entries.items() if entry.inst.startswith(MATRIX_PREFIXES)}


def _build_pipe_utilization(
    waves: Iterable[Wave], other_simd: Iterable[OtherSimdInstruction], matrix_pcs: set[Pc]
) -> tuple[Utilization, Utilization, Utilization, Utilization]:
    """(wmma, valu, vector memory, scalar) utilisation of one SIMD.

    An instruction keeps its pipe busy after its stall, for max(stall, duration) - stall cycles; a
    matrix instruction occupies the matrix pipe for that long and the VALU for three quarters of it.
    """
    wmma, valu, vmem, scalar = [], [], [], []
    for wave in waves:
        for inst in wave.instructions:
            length = max(inst.stall, inst.duration) - inst.stall
            if length <= 0:
                continue
            start = inst.time + inst.stall
            if inst.pc in matrix_pcs:
                wmma.append((start, length))
                valu.append((start, length * 3 // 4))
            elif inst.category == InstCategory.VALU:
                valu.append((start, length))
            elif inst.category in _VECTOR_MEMORY:
                vmem.append((start, length))
            elif inst.category in _SCALAR:
                scalar.append((start, length))
    vmem += [(other.time, other.cycles) for other in other_simd if other.cycles > 0]
    return _compute_util(wmma), _compute_util(valu), _compute_util(vmem), _compute_util(scalar)


class _SimdPipes:
    def __init__(self, waves: list[Wave], other_simd: list[OtherSimdInstruction], matrix_pcs: set[Pc]):
        wmma, valu, vmem, scalar = _build_pipe_utilization(waves, other_simd, matrix_pcs)
        math = _compute_union(valu, wmma)
        vector = _compute_union(math, vmem)
        self.wmma, self.valu, self.vmem, self.scalar = map(_index_util, (wmma, valu, vmem, scalar))
        self.math, self.vector = _index_util(math), _index_util(vector)
        self.all = _index_util(_compute_union(vector, scalar))

    def hidden(self, category: int, is_matrix: bool, last_time: int, clock: int, stall: int,
               cycles: int) -> tuple[int, int, int]:  # fmt: skip
        """(idle, stall, issue) hidden by the pipes that can hide this instruction: its own pipe
        hides idle and stall time only; of two candidates the one hiding more wins (the first on ties)."""

        def over(index: _UtilIndex) -> tuple[int, int, int]:
            return _indexed_interval(index, last_time, clock, stall, cycles)

        def without_issue(index: _UtilIndex) -> tuple[int, int, int]:
            idle, stalled, _issue = _indexed_interval(index, last_time, clock, stall, cycles)
            return idle, stalled, 0

        if is_matrix:
            return max(without_issue(self.valu), without_issue(self.wmma), key=sum)
        if category == InstCategory.VALU:
            return max(without_issue(self.valu), over(self.wmma), key=sum)
        if category in _VECTOR_MEMORY:
            return max(over(self.math), without_issue(self.vmem), key=sum)
        if category in _SCALAR:
            return max(over(self.vector), without_issue(self.scalar), key=sum)
        return over(self.all)


# --- analysis --------------------------------------------------------------------------------


def analyze_hidden_latency(records_by_se: Mapping[int, TraceRecords], *,
                           code_index: CodeIndex | None = None) -> HiddenLatencyResult:  # fmt: skip
    """Hidden idle, stall and issue cycles per PC, summed over all waves, and per (se, simd).
    ``code_index`` names the matrix instructions (by their ISA text); PC (0,0) is not counted."""
    matrix_pcs = _matrix_instruction_pcs(code_index)
    result = HiddenLatencyResult()
    for se, records in records_by_se.items():
        waves_by_simd: dict[int, list[Wave]] = {}
        for wave in records.waves:
            waves_by_simd.setdefault(wave.simd, []).append(wave)
        for simd, waves in waves_by_simd.items():
            pipes = _SimdPipes(waves, records.other_simd, matrix_pcs)
            scope = result.by_scope.setdefault((se, simd), {})
            for wave in waves:
                last_time = wave.begin_time
                for inst in wave.instructions:
                    cycles = max(inst.stall, inst.duration)
                    idle, stall, issue = pipes.hidden(inst.category, inst.pc in matrix_pcs, last_time, inst.time,
                                                      inst.stall, cycles)  # fmt: skip
                    last_time = inst.time + cycles
                    if inst.pc == _NULL_PC:
                        continue
                    for totals in (scope, result.by_pc):
                        entry = totals.get(inst.pc)
                        if entry is None:
                            entry = totals[inst.pc] = HiddenLatency()
                        entry.idle += idle
                        entry.stall += stall
                        entry.issue += issue
    return result

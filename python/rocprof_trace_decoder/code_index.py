"""Static code metadata (code.json rows) joined with per-instruction statistics.

A ``CodeIndex`` answers the decoder's ISA questions (it is an ``IsaProvider``) and
accumulates Hit/Latency/Stall/Idle counts from decoded waves; it writes the
updated ``code.json`` and the ``stats_*.csv`` file.
"""

from __future__ import annotations

import copy
import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .records import Pc, Wave

__all__ = ["CODE_HEADER", "CODE_ROW_WIDTH", "STATS_CSV_HEADER", "CodeEntry", "CodeIndex", "is_label_text"]

CODE_HEADER = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
CODE_ROW_INST = 0
CODE_ROW_LINE = 2
CODE_ROW_SOURCE = 3
CODE_ROW_CODE_OBJECT = 4
CODE_ROW_VADDR = 5
CODE_ROW_HIT = 6
CODE_ROW_LATENCY = 7
CODE_ROW_STALL = 8
CODE_ROW_IDLE = 9
CODE_ROW_WIDTH = 10
CODE_ROW_COUNTERS = (CODE_ROW_HIT, CODE_ROW_LATENCY, CODE_ROW_STALL, CODE_ROW_IDLE)

STATS_COL_CODE_OBJECT = "CodeObj"
STATS_COL_VADDR = "Vaddr"
STATS_COL_INSTRUCTION = "Instruction"
STATS_COL_HITCOUNT = "Hitcount"
STATS_COL_LATENCY = "Latency"
STATS_COL_STALL = "Stall"
STATS_COL_IDLE = "Idle"
STATS_COL_SOURCE = "Source"
STATS_CSV_HEADER = [STATS_COL_CODE_OBJECT, STATS_COL_VADDR, STATS_COL_INSTRUCTION, STATS_COL_HITCOUNT,
                    STATS_COL_LATENCY, STATS_COL_STALL, STATS_COL_IDLE, STATS_COL_SOURCE]  # fmt: skip

# Smallest instruction, also the size reported for the last instruction of a code object.
_MIN_INSTRUCTION_SIZE = 4


def is_label_text(text: str) -> bool:
    """Label rows (``; _name`` or ``label...``) describe an address but are no instruction."""
    return text.startswith(";") or text.startswith("label")


@dataclass
class CodeEntry:
    pc: Pc
    inst: str
    line_number: int
    source: str = ""
    hitcount: int = 0
    latency: int = 0
    stall: int = 0
    idle: int = 0
    expected_hitcount: int = 0
    expected_latency: int = 0
    expected_stall: int = 0
    expected_idle: int = 0
    memory_size: int = _MIN_INSTRUCTION_SIZE

    def counters(self) -> tuple[int, int, int, int]:
        return (self.hitcount, self.latency, self.stall, self.idle)

    def expected_counters(self) -> tuple[int, int, int, int]:
        return (self.expected_hitcount, self.expected_latency, self.expected_stall, self.expected_idle)


def _row_pc(row: list) -> Pc:
    return Pc(int(row[CODE_ROW_VADDR]), int(row[CODE_ROW_CODE_OBJECT]))


def _int_cell(value: str | None) -> int:
    value = (value or "").strip()
    return int(value, 0) if value else 0


class CodeIndex:
    def __init__(self, entries: Iterable[CodeEntry], document: dict | None = None):
        self.document = document or {"code": [], "header": CODE_HEADER}
        self.entries: dict[Pc, CodeEntry] = {}
        self.line_numbers: dict[Pc, int] = {}
        for entry in entries:
            self.entries[entry.pc] = entry
            self.line_numbers[entry.pc] = entry.line_number
        self._next_line_number = max(self.line_numbers.values(), default=0) + 1
        self._memory_sizes_valid = False

    # -- construction

    @classmethod
    def from_code_json(cls, path: str | Path, *, load_counts: bool = True) -> CodeIndex:
        return cls.from_document(json.loads(Path(path).read_text()), load_counts=load_counts)

    @classmethod
    def from_document(cls, doc: dict, *, load_counts: bool = True) -> CodeIndex:
        document = copy.deepcopy(doc)
        entries = []
        for row in document.get("code", []):
            if len(row) < CODE_ROW_WIDTH:
                continue
            if not load_counts:
                for column in CODE_ROW_COUNTERS:
                    row[column] = 0
            text = str(row[CODE_ROW_INST])
            if is_label_text(text):
                continue
            entry = CodeEntry(_row_pc(row), text, int(row[CODE_ROW_LINE]), str(row[CODE_ROW_SOURCE]))
            entry.hitcount, entry.latency, entry.stall, entry.idle = (int(row[c] or 0) for c in CODE_ROW_COUNTERS)
            entries.append(entry)
        return cls(entries, document)

    @classmethod
    def from_stats_csv(cls, paths: Iterable[str | Path]) -> CodeIndex:
        """Expected counters from control CSVs; a PC repeated across files is summed."""
        entries: dict[Pc, CodeEntry] = {}
        for path in paths:
            with Path(path).open(newline="") as handle:
                for row in csv.DictReader(handle):
                    text = row[STATS_COL_INSTRUCTION].strip()
                    if is_label_text(text):
                        continue
                    pc = Pc(int(row[STATS_COL_VADDR].strip(), 0), int(row[STATS_COL_CODE_OBJECT].strip(), 0))
                    entry = entries.get(pc)
                    if entry is None:
                        entry = entries[pc] = CodeEntry(pc, text, len(entries) + 1, row.get(STATS_COL_SOURCE) or "")
                    entry.expected_hitcount += _int_cell(row.get(STATS_COL_HITCOUNT))
                    entry.expected_latency += _int_cell(row.get(STATS_COL_LATENCY))
                    entry.expected_stall += _int_cell(row.get(STATS_COL_STALL))
                    entry.expected_idle += _int_cell(row.get(STATS_COL_IDLE))
        return cls(entries.values())

    # -- lookups

    def isa_for_pc(self, pc: Pc) -> tuple[str, int] | None:
        entry = self.entries.get(pc)
        if entry is None:
            return None
        if not self._memory_sizes_valid:
            self._compute_memory_sizes()
        return entry.inst, entry.memory_size

    def get_or_create(self, pc: Pc) -> CodeEntry:
        entry = self.entries.get(pc)
        if entry is None:
            entry = self.entries[pc] = CodeEntry(pc, "", self._next_line_number)
            self.line_numbers[pc] = entry.line_number
            self._next_line_number += 1
            self._memory_sizes_valid = False
        return entry

    def line_number(self, pc: Pc) -> int:
        return self.entries[pc].line_number

    def _compute_memory_sizes(self) -> None:
        """Instruction size = distance to the next known instruction of the same code object."""
        by_code_object: dict[int, list[CodeEntry]] = {}
        for entry in self.entries.values():
            by_code_object.setdefault(entry.pc.code_object_id, []).append(entry)
        for entries in by_code_object.values():
            entries.sort(key=lambda e: e.pc.address)
            for entry, following in zip(entries, entries[1:]):
                entry.memory_size = max(following.pc.address - entry.pc.address, _MIN_INSTRUCTION_SIZE)
            entries[-1].memory_size = _MIN_INSTRUCTION_SIZE
        self._memory_sizes_valid = True

    # -- statistics

    def accumulate_wave(self, wave: Wave) -> None:
        """Add one wave's instructions: latency = max(stall, duration); idle = gap since the
        previous instruction finished (the first one: since the wave began)."""
        busy_until = wave.begin_time
        entries = self.entries
        for inst in wave.instructions:
            pc = inst.pc
            if pc.address == 0 and pc.code_object_id == 0:
                continue
            entry = entries.get(pc) or self.get_or_create(pc)
            latency = max(inst.stall, inst.duration)
            entry.hitcount += 1
            entry.latency += latency
            entry.stall += inst.stall
            if inst.time > busy_until:
                entry.idle += inst.time - busy_until
            busy_until = max(busy_until, inst.time + latency)

    def add_counters(self, counters: dict[Pc, tuple[int, int, int, int]]) -> None:
        """Add statistics accumulated elsewhere (e.g. by a worker process) for known PCs."""
        for pc, (hitcount, latency, stall, idle) in counters.items():
            entry = self.entries[pc]
            entry.hitcount += hitcount
            entry.latency += latency
            entry.stall += stall
            entry.idle += idle

    def validate_expected(self) -> list[str]:
        problems = []
        for entry in sorted(self.entries.values(), key=lambda e: (e.pc.code_object_id, e.pc.address)):
            if entry.counters() == entry.expected_counters():
                continue
            problems.append(
                f"{entry.inst} - PC: {entry.pc.code_object_id},{entry.pc.address}\n"
                f"Hitcount: {entry.hitcount}/{entry.expected_hitcount}, "
                f"Stall: {entry.stall}/{entry.expected_stall}, "
                f"Latency: {entry.latency}/{entry.expected_latency}, "
                f"Idle: {entry.idle}/{entry.expected_idle}"
            )
        return problems

    # -- output

    def _entries_not_in_document(self) -> list[CodeEntry]:
        documented = {
            _row_pc(row)
            for row in self.document.get("code", [])
            if len(row) >= CODE_ROW_WIDTH and not is_label_text(str(row[CODE_ROW_INST]))
        }
        return [entry for pc, entry in self.entries.items() if pc not in documented]

    def code_document(self) -> dict:
        """The code.json document with this index's counters filled in."""
        rows = []
        for row in self.document.get("code", []):
            entry = None
            if len(row) >= CODE_ROW_WIDTH and not is_label_text(str(row[CODE_ROW_INST])):
                entry = self.entries.get(_row_pc(row))
            if entry is None:
                rows.append(row)
            else:
                rows.append(list(row[:CODE_ROW_HIT]) + list(entry.counters()) + list(row[CODE_ROW_WIDTH:]))
        for entry in sorted(self._entries_not_in_document(), key=lambda e: e.line_number):
            rows.append(
                [entry.inst, 0, entry.line_number, entry.source, entry.pc.code_object_id, entry.pc.address,
                 *entry.counters()]  # fmt: skip
            )
        document = dict(self.document)
        document["code"] = rows
        document.setdefault("header", CODE_HEADER)
        return document

    def write_code_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.code_document(), indent=2))

    def stats_rows(self) -> list[list]:
        """Rows of the stats CSV (without header), in code.json order, then unknown PCs."""
        rows = []
        for row in self.document.get("code", []):
            if len(row) < CODE_ROW_WIDTH:
                continue
            pc = _row_pc(row)
            text = str(row[CODE_ROW_INST])
            if is_label_text(text):
                rows.append([pc.code_object_id, pc.address, row[CODE_ROW_INST], 0, 0, 0, 0, row[CODE_ROW_SOURCE]])
                continue
            entry = self.entries.get(pc)
            if entry is not None:
                rows.append(self._stats_row(entry))
        extra = sorted(self._entries_not_in_document(), key=lambda e: (e.pc.code_object_id, e.pc.address))
        rows.extend(self._stats_row(entry) for entry in extra)
        return rows

    @staticmethod
    def _stats_row(entry: CodeEntry) -> list:
        return [entry.pc.code_object_id, entry.pc.address, entry.inst, *entry.counters(), entry.source]

    def write_stats_csv(self, path: str | Path) -> None:
        with Path(path).open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(STATS_CSV_HEADER)
            writer.writerows(self.stats_rows())

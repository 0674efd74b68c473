"""Packed SQTT marker headers in shader data: value normalisation and timestamp correction.

Code objects built with marker instrumentation declare, in code.json
``sqtt_funcmap_layout`` rows ``[codeobj, clock_bits, clock_shift]``, that each marker
header word carries a truncated shader-clock sample in its top ``clock_bits`` bits:

    header = sample_bits << (32 - clock_bits) | marker_id << 2 | flag_bits(2)

A header is recognised when its id is a known marker id of the active code object
(or it is a bare exit: id 0 with flag bits 1). Its value is rewritten to
``marker_id << 2 | flag_bits``. The clock sample tells when the marker was issued;
the trace timestamp may be later because the token was delayed. Per clock domain
(SE, CU, SIMD, layout) the samples are unwrapped in time order and each header is
moved earlier by its delay beyond the domain's smallest one (less the sample's
quantisation). Payload words that follow a header move with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .records import ShaderData, ShaderDataFlags, TraceRecords

__all__ = ["correct_marker_timestamps", "has_packed_marker_layout"]

_WORD_BITS = 32
_MAX_CLOCK_BITS = 29
_FLAG_BITS_MASK = 0x3
_BARE_EXIT_FLAGS = 0x1
_NOT_MARKER_FLAGS = (1 << ShaderDataFlags.IMM) | (1 << ShaderDataFlags.PRIV)


def _layouts(document: dict) -> dict[int, tuple[int, int]]:
    layouts = {}
    for row in document.get("sqtt_funcmap_layout", []) or []:
        try:
            code_object_id, bits, shift = (int(v) for v in row[:3])
        except (TypeError, ValueError):
            continue
        if code_object_id >= 0 and 0 < bits <= _MAX_CLOCK_BITS and shift >= 0 and bits + shift <= _WORD_BITS:
            layouts[code_object_id] = (bits, shift)
    return layouts


def has_packed_marker_layout(document: dict) -> bool:
    return bool(_layouts(document))


@dataclass
class _Block:
    """A header (or a lone record) and the payload records that belong to it."""

    records: list[ShaderData]
    domain: tuple | None = None  # clock domain of a timed header
    sample: int = 0
    period: int = 0
    delay: int = 0
    quantum: int = 0


def _marker_tables(document: dict, layouts: dict[int, tuple[int, int]]):
    known_ids: dict[int, set[int]] = {}
    for row in document.get("sqtt_funcmap", []) or []:
        try:
            code_object_id, marker_id, kind = int(row[0]), int(row[1]), str(row[2])
        except (TypeError, ValueError, IndexError):
            continue
        if kind != "K" and code_object_id in layouts:
            known_ids.setdefault(code_object_id, set()).add(marker_id)
    payload_counts: dict[tuple[int, int], int] = {}
    for row in document.get("sqtt_funcmap_payloads", []) or []:
        try:
            payload_counts[(int(row[0]), int(row[1]))] = int(row[2])
        except (TypeError, ValueError, IndexError):
            continue
    return known_ids, payload_counts


def _active_code_objects(records: TraceRecords) -> dict[tuple[int, int, int], list[tuple[int, int]]]:
    """Per wave slot, the time-sorted launches: (time, code object id)."""
    launches: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for occupancy in records.occupancy:
        if occupancy.start:
            key = (occupancy.cu, occupancy.simd, occupancy.wave_id)
            launches.setdefault(key, []).append((occupancy.time, occupancy.pc.code_object_id))
    for entries in launches.values():
        entries.sort(key=lambda e: e[0])
    return launches


def _code_object_at(launches: list[tuple[int, int]], time: int) -> int | None:
    """The last launch at or before ``time`` is active; a wave end does not retire it."""
    active = None
    for launch_time, code_object_id in launches:
        if launch_time > time:
            break
        active = code_object_id
    return active


def _blocks_of_slot(samples: list[ShaderData], launches: list[tuple[int, int]], se: int,
                    layouts, known_ids, payload_counts) -> list[_Block]:  # fmt: skip
    blocks: list[_Block] = []
    index = 0
    while index < len(samples):
        record = samples[index]
        index += 1
        block = _Block([record])
        blocks.append(block)
        if record.flags & _NOT_MARKER_FLAGS:
            continue
        code_object_id = _code_object_at(launches, record.time)
        if code_object_id is None:
            continue
        raw = record.value
        layout = layouts.get(code_object_id)
        if layout is None:
            # Unpacked (legacy) marker words: only their payload blocks matter, for ordering.
            payloads = payload_counts.get((code_object_id, raw >> 2), 0)
        else:
            bits, shift = layout
            marker_id = (raw >> 2) & ((1 << (_WORD_BITS - 2 - bits)) - 1)
            flag_bits = raw & _FLAG_BITS_MASK
            is_header = marker_id in known_ids.get(code_object_id, ()) or (
                marker_id == 0 and flag_bits == _BARE_EXIT_FLAGS
            )
            if not is_header:
                continue
            record.value = (marker_id << 2) | flag_bits
            payloads = payload_counts.get((code_object_id, marker_id), 0)
            if payloads == 0:
                block.domain = (se, record.cu, record.simd, bits, shift)
                block.sample = ((raw >> (_WORD_BITS - bits)) & ((1 << bits) - 1)) << shift
                block.period = 1 << (bits + shift)
                block.quantum = (1 << shift) - 1
        block.records.extend(samples[index : index + payloads])
        index += payloads
    return blocks


def _correct_domain(blocks: list[_Block]) -> None:
    blocks.sort(key=lambda b: b.records[0].time)
    if len({b.sample for b in blocks}) <= 1:
        return  # the clock never moved: nothing to align against
    unwrapped = blocks[0].sample
    previous = blocks[0].sample
    for block in blocks:
        unwrapped += (block.sample - previous) % block.period
        previous = block.sample
        block.delay = block.records[0].time - unwrapped
    smallest = min(b.delay for b in blocks)
    for block in blocks:
        correction = block.delay - smallest - block.quantum
        if correction > 0:
            for record in block.records:
                record.time -= correction


def correct_marker_timestamps(records_by_se: Iterable[tuple[int, TraceRecords]], document: dict) -> None:
    """Normalise marker header values and correct their times, in place; re-sorts shader data."""
    layouts = _layouts(document)
    if not layouts:
        return
    known_ids, payload_counts = _marker_tables(document, layouts)
    for se, records in records_by_se:
        launches = _active_code_objects(records)
        slots: dict[tuple[int, int, int], list[ShaderData]] = {}
        for sample in records.shaderdata:
            slots.setdefault((sample.cu, sample.simd, sample.wave_id), []).append(sample)
        blocks: list[_Block] = []
        for key, samples in slots.items():
            samples.sort(key=lambda s: s.time)
            blocks += _blocks_of_slot(samples, launches.get(key, []), se, layouts, known_ids, payload_counts)
        domains: dict[tuple, list[_Block]] = {}
        for block in blocks:
            if block.domain is not None:
                domains.setdefault(block.domain, []).append(block)
        for domain_blocks in domains.values():
            _correct_domain(domain_blocks)
        blocks.sort(key=lambda b: b.records[0].time)
        records.shaderdata = [record for block in blocks for record in block.records]

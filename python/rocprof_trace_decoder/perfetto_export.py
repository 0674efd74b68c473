"""Decoded thread traces as a Perfetto protobuf trace (opens in ui.perfetto.dev).

An extra of this package, not an upstream module (``rocprof-att --perfetto``).

Layout: a process per shader engine; under it a thread track per (CU, SIMD, wave slot) holding one
slice per wave (named after its kernel where code.json knows it), child tracks holding one slice per
instruction (its ISA text, with its category as the slice category and PC, code object, stall,
duration and source line as arguments), and counter tracks for the waves resident on the shader
engine and on each CU. Instructions of a wave overlap in time (a load is still in flight when the
next instruction issues); Perfetto needs the slices of one track to nest, so overlapping
instructions go to as many child tracks ("lanes") as the deepest overlap needs.

Time: REALTIME records pair the shader clock with the GPU's realtime clock, so timestamps are
nanoseconds (piecewise linear between samples) when the trace has them; otherwise they are
shader-clock cycles, and the process names say so. Durations, stalls and times in the arguments
are always cycles.

Needs the ``perfetto`` package (``pip install 'rocprof-trace-decoder[perfetto]'``).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .code_index import CodeIndex
from .rcv import kernel_display_name, kernel_names
from .records import InstCategory, Pc, Realtime, TraceRecords, Wave

__all__ = ["PERFETTO_INSTALL_HINT", "ShaderClock", "TraceSource", "require_perfetto", "write_perfetto_trace"]

PERFETTO_INSTALL_HINT = "pip install 'rocprof-trace-decoder[perfetto]'"

# The GPU realtime clock runs at 100 MHz on the GPUs this decoder supports; an RT_FREQUENCY record
# (emitted by traces that carry the agent's frequency) overrides it.
DEFAULT_REALTIME_FREQUENCY_HZ = 100_000_000

WAVE_CATEGORY = "wave"
_SEQUENCE_ID = 1
_ANNOTATIONS = ("pc", "code_object", "stall", "duration", "source", "cu", "simd", "slot", "instructions", "begin",
                "end")  # fmt: skip

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class TraceSource:
    """One shader engine's decoded records and where they came from."""

    run: int
    shader_engine: int
    records: TraceRecords


def require_perfetto():
    """The perfetto package's trace builder module, or ImportError saying how to install it."""
    try:
        from perfetto.trace_builder import proto_builder
    except ImportError as exc:
        raise ImportError(f"Perfetto output needs the perfetto package: {PERFETTO_INSTALL_HINT}") from exc
    return proto_builder


class ShaderClock:
    """Shader-clock cycles to nanoseconds through (shader clock, realtime clock) samples.

    Piecewise linear between samples, extended with the first and last segments' rates. Samples
    that do not advance both clocks are dropped, so the mapping keeps the order of events.
    """

    def __init__(self, samples: Iterable[Realtime], frequency_hz: int):
        self.cycles: list[int] = []
        self.nanoseconds: list[float] = []
        for sample in sorted(samples, key=lambda s: (s.shader_clock, s.realtime_clock)):
            ns = sample.realtime_clock * 1e9 / frequency_hz
            if not self.cycles or (sample.shader_clock > self.cycles[-1] and ns > self.nanoseconds[-1]):
                self.cycles.append(sample.shader_clock)
                self.nanoseconds.append(ns)

    @property
    def usable(self) -> bool:
        return len(self.cycles) >= 2

    def ns(self, cycles: int) -> int:
        i = min(max(bisect.bisect_right(self.cycles, cycles) - 1, 0), len(self.cycles) - 2)
        x0, x1 = self.cycles[i], self.cycles[i + 1]
        y0, y1 = self.nanoseconds[i], self.nanoseconds[i + 1]
        return round(y0 + (cycles - x0) * (y1 - y0) / (x1 - x0))


def _clocks(sources: Sequence[TraceSource]) -> dict[tuple[int, int], Callable[[int], int]] | None:
    """Per (run, SE): its cycles-to-ns mapping; SEs without samples of their own use every SE's
    samples of the run. None when no run has realtime samples (timestamps stay in cycles)."""
    frequency = next((s.records.realtime_frequency for s in sources if s.records.realtime_frequency),
                     DEFAULT_REALTIME_FREQUENCY_HZ)  # fmt: skip
    pooled: dict[int, list[Realtime]] = {}
    for source in sources:
        pooled.setdefault(source.run, []).extend(source.records.realtime)
    mappings = {}
    for source in sources:
        own = ShaderClock(source.records.realtime, frequency)
        clock = own if own.usable else ShaderClock(pooled[source.run], frequency)
        if not clock.usable:
            return None
        mappings[(source.run, source.shader_engine)] = clock.ns
    return mappings


def _lanes(intervals: Iterable[tuple[int, int]]) -> list[int]:
    """For intervals in start order: the lowest lane whose previous interval has ended."""
    lane_ends: list[int] = []
    lanes = []
    for begin, end in intervals:
        for lane, lane_end in enumerate(lane_ends):
            if lane_end <= begin:
                lane_ends[lane] = end
                lanes.append(lane)
                break
        else:
            lanes.append(len(lane_ends))
            lane_ends.append(end)
    return lanes


class _Writer:
    """Packets of one trusted sequence: track descriptors, interned names and track events."""

    def __init__(self, out: BinaryIO):
        proto_builder = require_perfetto()
        self._builder = proto_builder.StreamingTraceProtoBuilder(out)
        self._next_uuid = 1
        self._names: dict[str, int] = {}
        self._categories: dict[str, int] = {}
        self._annotations = {name: iid for iid, name in enumerate(_ANNOTATIONS, start=1)}
        packet = self._packet()
        packet.sequence_flags = packet.SEQ_INCREMENTAL_STATE_CLEARED
        for name, iid in self._annotations.items():
            packet.interned_data.debug_annotation_names.add(iid=iid, name=name)
        self._builder.write_packet(packet)

    def _packet(self):
        packet = self._builder.create_packet()
        packet.trusted_packet_sequence_id = _SEQUENCE_ID
        return packet

    def _uuid(self) -> int:
        self._next_uuid += 1
        return self._next_uuid

    def process(self, pid: int, name: str) -> int:
        packet = self._packet()
        uuid = self._uuid()
        packet.track_descriptor.uuid = uuid
        packet.track_descriptor.process.pid = pid
        packet.track_descriptor.process.process_name = name
        self._builder.write_packet(packet)
        return uuid

    def thread(self, pid: int, tid: int, name: str) -> int:
        packet = self._packet()
        uuid = self._uuid()
        packet.track_descriptor.uuid = uuid
        packet.track_descriptor.thread.pid = pid
        packet.track_descriptor.thread.tid = tid
        packet.track_descriptor.thread.thread_name = name
        self._builder.write_packet(packet)
        return uuid

    def track(self, parent: int, name: str, *, counter: bool = False) -> int:
        packet = self._packet()
        uuid = self._uuid()
        descriptor = packet.track_descriptor
        descriptor.uuid = uuid
        descriptor.parent_uuid = parent
        descriptor.name = name
        if counter:
            descriptor.counter.unit = descriptor.counter.UNIT_COUNT
        self._builder.write_packet(packet)
        return uuid

    def _event_packet(self, timestamp: int, track: int):
        packet = self._packet()
        packet.sequence_flags = packet.SEQ_NEEDS_INCREMENTAL_STATE
        packet.timestamp = timestamp
        packet.track_event.track_uuid = track
        return packet

    @staticmethod
    def _intern(table: dict[str, int], text: str, entries) -> int:
        iid = table.get(text)
        if iid is None:
            iid = table[text] = len(table) + 1
            entries.add(iid=iid, name=text)
        return iid

    def begin(self, timestamp: int, track: int, name: str, category: str, args: dict[str, int | str]) -> None:
        packet = self._event_packet(timestamp, track)
        event = packet.track_event
        event.type = event.TYPE_SLICE_BEGIN
        event.name_iid = self._intern(self._names, name, packet.interned_data.event_names)
        event.category_iids.append(self._intern(self._categories, category, packet.interned_data.event_categories))
        for key, value in args.items():
            annotation = event.debug_annotations.add(name_iid=self._annotations[key])
            if key == "pc":
                annotation.pointer_value = value
            elif isinstance(value, str):
                annotation.string_value = value
            else:
                annotation.uint_value = value
        self._builder.write_packet(packet)

    def end(self, timestamp: int, track: int) -> None:
        packet = self._event_packet(timestamp, track)
        packet.track_event.type = packet.track_event.TYPE_SLICE_END
        self._builder.write_packet(packet)

    def count(self, timestamp: int, track: int, value: int) -> None:
        packet = self._event_packet(timestamp, track)
        packet.track_event.type = packet.track_event.TYPE_COUNTER
        packet.track_event.counter_value = value
        self._builder.write_packet(packet)


class _ShaderEngineExport:
    def __init__(self, writer: _Writer, source: TraceSource, pid: int, to_ns: Callable[[int], int],
                 code_index: CodeIndex | None, kernels: dict[Pc, str], in_cycles: bool):  # fmt: skip
        self.writer, self.source, self.pid, self.to_ns = writer, source, pid, to_ns
        self.code_index, self.kernels = code_index, kernels
        unit = " (time axis: shader clock cycles)" if in_cycles else ""
        self.process = writer.process(pid, f"Run {source.run} shader engine {source.shader_engine}{unit}")
        self.threads = 0

    def write(self) -> None:
        launches = self._launches()
        waves = sorted(self.source.records.waves, key=lambda w: (w.cu, w.simd, w.wave_id, w.begin_time))
        by_slot: dict[tuple[int, int, int], list[Wave]] = {}
        for wave in waves:
            by_slot.setdefault((wave.cu, wave.simd, wave.wave_id), []).append(wave)
        for slot, slot_waves in sorted(by_slot.items()):
            self._write_slot(slot, slot_waves, launches)
        self._write_occupancy()

    def _launches(self) -> dict[tuple[int, int, int], list[tuple[int, Pc]]]:
        launches: dict[tuple[int, int, int], list[tuple[int, Pc]]] = {}
        for record in self.source.records.occupancy:
            if record.start:
                launches.setdefault((record.cu, record.simd, record.wave_id), []).append((record.time, record.pc))
        for slot_launches in launches.values():
            slot_launches.sort(key=lambda item: item[0])
        return launches

    def _kernel_name(self, wave: Wave, launches: dict) -> str:
        """The kernel of the last launch into the wave's slot at or before the wave began."""
        slot_launches = launches.get((wave.cu, wave.simd, wave.wave_id), [])
        index = bisect.bisect_right([time for time, _ in slot_launches], wave.begin_time) - 1
        if index < 0:
            return "wave"
        pc = slot_launches[index][1]
        return self.kernels.get(pc) or kernel_display_name(pc)

    def _write_slot(self, slot: tuple[int, int, int], waves: list[Wave], launches: dict) -> None:
        cu, simd, wave_id = slot
        pid, writer, ns = self.pid, self.writer, self.to_ns
        self.threads += 1
        thread = writer.thread(pid, pid * 100_000 + self.threads, f"CU {cu} SIMD {simd} slot {wave_id}")
        wave_tracks = [thread]
        for wave, lane in zip(waves, _lanes((w.begin_time, w.end_time) for w in waves)):
            while lane >= len(wave_tracks):
                wave_tracks.append(writer.track(thread, f"waves ({len(wave_tracks) + 1})"))
            args = {"cu": cu, "simd": simd, "slot": wave_id, "instructions": len(wave.instructions),
                    "begin": wave.begin_time, "end": wave.end_time}  # fmt: skip
            writer.begin(ns(wave.begin_time), wave_tracks[lane], self._kernel_name(wave, launches), WAVE_CATEGORY, args)
            writer.end(ns(wave.end_time), wave_tracks[lane])
        lane_tracks: list[int] = []
        instructions = sorted((inst for wave in waves for inst in wave.instructions), key=lambda i: i.time)
        for inst, lane in zip(instructions, _lanes((i.time, i.time + max(i.duration, 0)) for i in instructions)):
            while lane >= len(lane_tracks):
                lane_tracks.append(writer.track(thread, f"instructions ({len(lane_tracks) + 1})"))
            category = _category_name(inst.category)
            entry = self.code_index.entries.get(inst.pc) if self.code_index is not None else None
            args: dict[str, int | str] = {"pc": inst.pc.address, "code_object": inst.pc.code_object_id,
                                          "stall": inst.stall, "duration": inst.duration}  # fmt: skip
            if entry is not None and entry.source:
                args["source"] = entry.source
            name = entry.inst if entry is not None and entry.inst else category
            writer.begin(ns(inst.time), lane_tracks[lane], name, category, args)
            writer.end(ns(inst.time + max(inst.duration, 0)), lane_tracks[lane])

    def _write_occupancy(self) -> None:
        """Waves resident on the shader engine and on each CU, one sample per occupancy record.
        Waves resident before tracing began show up as ends without starts: the counts are lifted
        so that the lowest value is 0."""
        records = sorted(self.source.records.occupancy, key=lambda o: o.time)
        if not records:
            return
        engine_track = self.writer.track(self.process, "waves resident", counter=True)
        cu_tracks: dict[int, int] = {}
        series: dict[int | None, list[tuple[int, int]]] = {}
        counts: dict[int | None, int] = {}
        for record in records:
            delta = 1 if record.start else -1
            for key in (None, record.cu):
                counts[key] = counts.get(key, 0) + delta
                series.setdefault(key, []).append((record.time, counts[key]))
        for key in sorted(series, key=lambda k: -1 if k is None else k):
            if key is None:
                track = engine_track
            else:
                track = cu_tracks[key] = self.writer.track(self.process, f"CU {key} waves resident", counter=True)
            lift = -min(0, *(value for _, value in series[key]))
            for time, value in series[key]:
                self.writer.count(self.to_ns(time), track, value + lift)


def _category_name(category: int) -> str:
    try:
        return InstCategory(category).name
    except ValueError:
        return f"category {category}"


def write_perfetto_trace(path: str | Path, sources: Sequence[TraceSource], code_index: CodeIndex | None = None, *,
                         on_progress: ProgressCallback | None = None) -> Path:  # fmt: skip
    """Write the shader engines' records as one Perfetto trace; ``on_progress(done, total)`` is
    called after each shader engine."""
    require_perfetto()
    path = Path(path)
    clocks = _clocks(sources)
    kernels = kernel_names(code_index.document) if code_index is not None else {}
    # Written next to the destination and renamed when complete: no half-written trace is left.
    partial = path.with_name(f".{path.name}.partial")
    try:
        with partial.open("wb") as out:
            writer = _Writer(out)
            for done, source in enumerate(sources, start=1):
                to_ns = clocks[(source.run, source.shader_engine)] if clocks is not None else int
                _ShaderEngineExport(writer, source, done, to_ns, code_index, kernels, clocks is None).write()
                if on_progress is not None:
                    on_progress(done, len(sources))
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path

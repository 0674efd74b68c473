"""ROCprof Compute Viewer (RCV) output: the JSON sidecar files of one run directory.

Schema literals (file names, keys, ``navi``/``vega``) are viewer-format details and
live only here. Keys are written in insertion order, which follows the order in
which shader engines are handed to the writer.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from collections.abc import Iterable
from pathlib import Path

from .code_index import CodeIndex
from .records import Dispatch, Event, EventType, Occupancy, Pc, Realtime, TraceRecords, Wave

__all__ = [
    "DEFAULT_RUN_BASE_NAME",
    "TOOL_VERSION",
    "VALID_OUTPUT_FORMATS",
    "RcvOutputWriter",
    "ShaderEngineFileWriter",
    "ShaderEngineResult",
    "copy_source_snapshots",
    "normalize_output_formats",
    "run_output_dir",
    "write_code_json",
    "write_source_snapshots",
    "write_stats_csv",
]

TOOL_VERSION = "3.1.0"
DEFAULT_RUN_BASE_NAME = "att"
VALID_OUTPUT_FORMATS = frozenset({"csv", "json"})

OCCUPANCY_FIELDS = ["time", "cu", "simd", "wave_id", "start", "kernel_id", "me_id", "pipe_id", "is_ext",
                    "workgroup_id", "cluster_id"]  # fmt: skip
# A wave with no instructions is only worth a file when its timeline says something.
_MIN_TIMELINE_STATES_WITHOUT_INSTRUCTIONS = 3
_DEFAULT_GFXIP = 9
_NULL_PC = Pc(0, 0)


def normalize_output_formats(formats: str | Iterable[str]) -> frozenset[str]:
    """``"json,csv"`` or an iterable of names -> the set of exact, known format names."""
    items = [formats] if isinstance(formats, str) else list(formats)
    names = frozenset(part.strip().lower() for item in items for part in str(item).split(",") if part.strip())
    if not names:
        raise ValueError("No output formats requested.")
    unknown = names - VALID_OUTPUT_FORMATS
    if unknown:
        raise ValueError(
            f"Unsupported output format(s): {', '.join(sorted(unknown))}. "
            f"Expected one or more of: {', '.join(sorted(VALID_OUTPUT_FORMATS))}"
        )
    return names


_quote = json.encoder.encode_basestring_ascii
_SCALARS = {True: "true", False: "false", None: "null"}


class IntRows(list):
    """A table whose rows are non-empty lists of ints: encoded without per-value checks."""


def _encode_int_rows(rows: IntRows, indent: str) -> str:
    if not rows:
        return "[]"
    row_indent = indent + "  "
    value_indent = row_indent + "  "
    head, separator, tail = "[\n" + value_indent, ",\n" + value_indent, "\n" + row_indent + "]"
    encoded = [head + separator.join(map(str, row)) + tail for row in rows]
    return "[\n" + row_indent + (",\n" + row_indent).join(encoded) + "\n" + indent + "]"


def _encode_indented(value: object, indent: str, out: list[str]) -> None:
    """Append the ``json.dumps(value, indent=2)`` text of ``value``, nested at ``indent``.

    json's indenting encoder is pure Python; the viewer files hold millions of small
    integer rows, so IntRows tables and flat integer lists take join-based fast paths.
    """
    if type(value) is IntRows:
        out.append(_encode_int_rows(value, indent))
    elif isinstance(value, str):
        out.append(_quote(value))
    elif value is None or isinstance(value, bool):
        out.append(_SCALARS[value])
    elif isinstance(value, (int, float)):
        out.append(json.dumps(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = indent + "  "
        out.append("{\n" + inner)
        first = True
        for key, item in value.items():
            if not first:
                out.append(",\n" + inner)
            first = False
            out.append(_quote(key if isinstance(key, str) else json.dumps(key).strip('"')) + ": ")
            _encode_indented(item, inner, out)
        out.append("\n" + indent + "}")
    else:
        items = list(value)
        if not items:
            out.append("[]")
            return
        inner = indent + "  "
        if all(type(item) is int for item in items):
            separator = ",\n" + inner
            out.append("[\n" + inner + separator.join(map(str, items)) + "\n" + indent + "]")
            return
        out.append("[\n" + inner)
        for position, item in enumerate(items):
            if position:
                out.append(",\n" + inner)
            _encode_indented(item, inner, out)
        out.append("\n" + indent + "]")


def dumps_indented(value: object) -> str:
    """Same text as ``json.dumps(value, indent=2)``, faster for large integer tables."""
    out: list[str] = []
    _encode_indented(value, "", out)
    return "".join(out)


def write_json(path: Path, data: object) -> None:
    path.write_text(dumps_indented(data))


def kernel_display_name(pc: Pc) -> str:
    return f"{pc.code_object_id} / 0x{pc.address:x}"


def kernel_names(document: dict) -> dict[Pc, str]:
    """Kernel names of a code.json document by entry PC."""
    names = {}
    for kernel in document.get("kernels", []):
        pc = Pc(int(kernel.get("address", -1)), int(kernel.get("codeobj", -1)))
        names[pc] = str(kernel.get("name") or kernel.get("demangled") or kernel_display_name(pc))
    return names


@dataclass
class ShaderEngineResult:
    """What the run-level files need from one shader engine's records (small enough to pass
    between processes: the bulky waves are already written to their files)."""

    se: int
    gfxip: int | None
    realtime_frequency: int | None
    occupancy: list[Occupancy]
    events: list[Event]
    dispatches: list[Dispatch]
    realtime: list[Realtime]
    wave_files: list[tuple[int, int, int, list]] = field(default_factory=list)  # (simd, slot, n, [file, begin, end])
    other_simd_files: list[list] = field(default_factory=list)
    shaderdata_files: list[list] = field(default_factory=list)


class ShaderEngineFileWriter:
    """Writes the per-SE files (waves, other-SIMD, shaderdata, perf counters) and accumulates
    every wave's statistics into ``code_index``. Numbering continues across calls for an SE."""

    def __init__(self, output_dir: Path, code_index: CodeIndex, *, write_json: bool):
        self.output_dir = Path(output_dir)
        self.code_index = code_index
        self.write_json = write_json
        self._wave_counts: dict[tuple[int, int, int], int] = {}
        self._other_simd_chunks: dict[int, int] = {}
        self._shaderdata_chunks: dict[int, int] = {}

    def write(self, se: int, records: TraceRecords) -> ShaderEngineResult:
        result = ShaderEngineResult(se, records.gfxip, records.realtime_frequency, records.occupancy,
                                    records.events, records.dispatches, records.realtime)  # fmt: skip
        if self.write_json:
            if records.perf_events:
                self._write_perf_counters(se, records)
            if records.other_simd:
                result.other_simd_files.append(self._write_other_simd(se, records))
            if records.shaderdata:
                result.shaderdata_files.append(self._write_shaderdata(se, records))
        for wave in records.waves:
            self.code_index.accumulate_wave(wave)
            if self.write_json and (wave.instructions or len(wave.timeline) >= _MIN_TIMELINE_STATES_WITHOUT_INSTRUCTIONS):
                result.wave_files.append(self._write_wave(se, wave))
        return result

    def _write_wave(self, se: int, wave: Wave) -> tuple[int, int, int, list]:
        key = (se, wave.simd, wave.wave_id)
        number = self._wave_counts.get(key, 0)
        self._wave_counts[key] = number + 1
        filename = f"se{se}_sm{wave.simd}_sl{wave.wave_id}_wv{number}.json"

        get_or_create = self.code_index.get_or_create
        line_of: dict[Pc, int] = {}
        instructions = []
        for inst in wave.instructions:
            line = line_of.get(inst.pc)
            if line is None:
                line = line_of[inst.pc] = get_or_create(inst.pc).line_number
            instructions.append([inst.time, inst.category, inst.stall, inst.duration, line])
        write_json(
            self.output_dir / filename,
            {
                "name": f"SE{se}",
                "duration": wave.end_time - wave.begin_time,
                "wave": {
                    "cu": wave.cu,
                    "id": number,
                    "simd": wave.simd,
                    "slot": wave.wave_id,
                    "begin": wave.begin_time,
                    "end": wave.end_time,
                    "instructions": IntRows(instructions),
                    "timeline": IntRows([[state.type, state.duration] for state in wave.timeline]),
                    "waitcnt": [],
                },
                "num_stitched": len(wave.instructions),
                "num_insts": len(wave.instructions),
            },
        )
        return (wave.simd, wave.wave_id, number, [filename, wave.begin_time, wave.end_time])

    def _write_perf_counters(self, se: int, records: TraceRecords) -> None:
        rows = IntRows([e.time, e.events0, e.events1, e.events2, e.events3, e.cu, e.bank] for e in records.perf_events)
        write_json(self.output_dir / f"se{se}_perfcounter.json", {"data": rows})

    def _next_chunk(self, chunks: dict[int, int], se: int) -> int:
        index = chunks.get(se, 0)
        chunks[se] = index + 1
        return index

    def _write_other_simd(self, se: int, records: TraceRecords) -> list:
        instructions = records.other_simd
        begin = instructions[0].time
        end = instructions[-1].time + instructions[-1].cycles
        filename = f"other_simd_se{se}_{self._next_chunk(self._other_simd_chunks, se)}.json"
        write_json(
            self.output_dir / filename,
            {
                "type": "OTHER_SIMD_INSTRUCTIONS",
                "begin_time": begin,
                "end_time": end,
                "wgp": instructions[0].wgp,
                "instructions_schema": ["time", "duration", "category"],
                "instructions_count": len(instructions),
                "instructions": IntRows([i.time, i.cycles, i.category] for i in instructions),
            },
        )
        return [filename, begin, end]

    def _write_shaderdata(self, se: int, records: TraceRecords) -> list:
        samples = records.shaderdata
        begin, end = samples[0].time, samples[-1].time
        filename = f"shaderdata_{se}_{self._next_chunk(self._shaderdata_chunks, se)}.json"
        write_json(
            self.output_dir / filename,
            {
                "type": "shaderdata",
                "begin_time": begin,
                "end_time": end,
                "records_schema": ["time", "value", "cu", "simd", "wave_id", "flags"],
                "records_count": len(samples),
                "records": IntRows([s.time, s.value, s.cu, s.simd, s.wave_id, s.flags] for s in samples),
            },
        )
        return [filename, begin, end]


class RcvOutputWriter:
    """Collects decoded records per shader engine and writes the viewer files.

    Per-SE files are written as records arrive; ``finish()`` writes the files that
    summarise every SE (filenames, occupancy, realtime). Statistics are accumulated into
    ``code_index`` for every wave, whatever the formats.
    """

    def __init__(self, output_dir: Path, code_index: CodeIndex, *, formats: str | Iterable[str]):
        self.output_dir = Path(output_dir)
        self.code_index = code_index
        self.formats = normalize_output_formats(formats)
        self.write_json_files = "json" in self.formats
        self.gfxip = _DEFAULT_GFXIP
        self.realtime_frequency = 0
        self._files = ShaderEngineFileWriter(self.output_dir, code_index, write_json=self.write_json_files)
        self._results_by_se: dict[int, list[ShaderEngineResult]] = {}
        self._wave_files: dict[int, dict[int, dict[int, dict[int, list]]]] = {}
        self._other_simd_files: dict[int, list[list]] = {}
        self._shaderdata_files: dict[int, list[list]] = {}
        self._kernel_ids: dict[Pc, int] = {_NULL_PC: 0}
        self._kernel_names = kernel_names(code_index.document)

    def add_shader_records(self, se: int, records: TraceRecords) -> None:
        self.add_result(self._files.write(se, records))

    def add_result(self, result: ShaderEngineResult) -> None:
        """Take one SE's result, whether written here or by a ShaderEngineFileWriter elsewhere."""
        if result.gfxip is not None:
            self.gfxip = result.gfxip
        if result.realtime_frequency is not None:
            self.realtime_frequency = result.realtime_frequency
        se = result.se
        self._results_by_se.setdefault(se, []).append(result)
        for simd, slot, number, entry in result.wave_files:
            self._wave_files.setdefault(se, {}).setdefault(simd, {}).setdefault(slot, {})[number] = entry
        if result.other_simd_files:
            self._other_simd_files.setdefault(se, []).extend(result.other_simd_files)
        if result.shaderdata_files:
            self._shaderdata_files.setdefault(se, []).extend(result.shaderdata_files)

    def finish(self) -> None:
        if not self.write_json_files:
            return
        self._write_filenames()
        self._write_occupancy()
        self._write_realtime()

    # -- summary files

    def _write_filenames(self) -> None:
        def keyed(mapping: dict) -> dict:
            return {str(k): keyed(v) if isinstance(v, dict) else v for k, v in mapping.items()}

        write_json(
            self.output_dir / "filenames.json",
            {
                "global_begin_time": 0,
                "gfxv": "navi" if self.gfxip > 9 else "vega",
                "gfxip": self.gfxip,
                "version": TOOL_VERSION,
                "counter_names": [],
                "wave_filenames": keyed(self._wave_files),
                "other_simd_filenames": keyed(self._other_simd_files),
                "shaderdata_filenames": keyed(self._shaderdata_files),
            },
        )

    def _kernel_id(self, pc: Pc) -> int:
        """Kernel ids are numbered in first-use order; 0 is the null PC."""
        return self._kernel_ids.setdefault(pc, len(self._kernel_ids))

    def _kernel_name(self, pc: Pc) -> str:
        return self._kernel_names.get(pc) or kernel_display_name(pc)

    def _write_occupancy(self) -> None:
        occupancy_rows = {}
        for se, batches in self._results_by_se.items():
            occupancy_rows[str(se)] = IntRows(
                [o.time, o.cu, o.simd, o.wave_id, o.start, self._kernel_id(o.pc), o.me_id, o.pipe_id, o.is_ext,
                 o.workgroup_id, o.cluster_id]  # fmt: skip
                for result in batches
                for o in result.occupancy
            )
        events = {}
        for se, batches in self._results_by_se.items():
            # Dispatches before events at equal times: the sort is stable.
            timeline = [(d.time, self._dispatch_json(d)) for result in batches for d in result.dispatches]
            timeline += [(e.time, self._event_json(e)) for result in batches for e in result.events]
            timeline.sort(key=lambda item: item[0])
            events[str(se)] = [entry for _, entry in timeline]
        document = {
            "occupancy_fields": OCCUPANCY_FIELDS,
            "events": events,
            "dispatches": {str(kernel_id): self._kernel_name(pc) for pc, kernel_id in self._kernel_ids.items()},
            "version": TOOL_VERSION,
        }
        document.update(occupancy_rows)
        write_json(self.output_dir / "occupancy.json", document)

    def _dispatch_json(self, dispatch: Dispatch) -> dict:
        entry = dispatch.entry_point
        return {
            "kind": "dispatch",
            "time": dispatch.time,
            "me_id": dispatch.me_id,
            "pipe_id": dispatch.pipe_id,
            "kernel_id": self._kernel_id(entry),
            "kernel_name": self._kernel_name(entry),
            "entry_point": {"address": entry.address, "code_object_id": entry.code_object_id},
            "user_sgprs": dispatch.user_sgprs,
            "vgprs": dispatch.vgprs,
            "sgprs": dispatch.sgprs,
            "lds_size": dispatch.lds_size,
            "thread_dim_x": dispatch.thread_dim_x,
            "thread_dim_y": dispatch.thread_dim_y,
            "thread_dim_z": dispatch.thread_dim_z,
            "dispatch_pkt_addr": dispatch.dispatch_pkt_addr,
            "byte_offset": dispatch.byte_offset,
            "flags": dispatch.flags,
        }

    @staticmethod
    def _event_json(event: Event) -> dict:
        out = {
            "kind": "event",
            "time": event.time,
            "type": event.type,
            "me_id": event.me_id,
            "pipe_id": event.pipe_id,
            "flags": event.flags,
            "payload": event.payload.raw,
            "byte_offset": event.byte_offset,
        }
        if event.type in (EventType.CODE_OBJECT_LOAD, EventType.CODE_OBJECT_UNLOAD):
            out["code_object_id"] = event.payload.code_object_id
        elif event.type == EventType.CLUSTER_BARRIER:
            out["cluster_id"] = event.payload.cluster_id
            out["barrier_id"] = event.payload.barrier_id
        return out

    def _write_realtime(self) -> None:
        if not any(result.realtime for batches in self._results_by_se.values() for result in batches):
            return
        document: dict[str, object] = {
            "metadata": {"descriptor": "[gfx_clock, realtime_clock]", "frequency": self.realtime_frequency}
        }
        for se, batches in self._results_by_se.items():
            document[f"SE{se}"] = IntRows([r.shader_clock, r.realtime_clock] for result in batches for r in result.realtime)
        write_json(self.output_dir / "realtime.json", document)


def run_output_dir(output_root: str | Path, base_name: str, run: int, *, use_root: bool = False) -> Path:
    root = Path(output_root)
    return root if use_root else root / f"ui_output_{base_name}{run}"


def write_code_json(output_dir: str | Path, code_index: CodeIndex) -> None:
    code_index.write_code_json(Path(output_dir) / "code.json")


def write_stats_csv(output_dir: str | Path, code_index: CodeIndex, run_dir_name: str) -> None:
    code_index.write_stats_csv(Path(output_dir) / f"stats_{run_dir_name}.csv")


def write_source_snapshots(source_paths: Iterable[str | Path], output_dir: str | Path) -> int:
    """Copy existing source files as ``source_<i>_<name>`` and index them in snapshots.json.

    snapshots.json nests the path components of each source (``/`` is the top key of
    absolute paths); its leaves are the snapshot file names. Returns the number copied.
    """
    out_dir = Path(output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = list(dict.fromkeys(Path(p) for p in source_paths if Path(p).is_file()))
    tree: dict = {}
    for index, source in enumerate(sources):
        filename = f"source_{index}_{source.name}"
        shutil.copyfile(source, out_dir / filename)
        node = tree
        *parents, leaf = source.parts
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[leaf] = filename
    if sources:
        write_json(out_dir / "snapshots.json", tree)
    return len(sources)


def copy_source_snapshots(src_dir: str | Path, dst_dir: str | Path) -> None:
    """Copy an existing snapshots.json and its source_* files next to another code.json."""
    src, dst = Path(src_dir), Path(dst_dir)
    for path in [src / "snapshots.json", *sorted(src.glob("source_*"))]:
        target = dst / path.name
        if path.is_file() and path.resolve() != target.resolve():
            shutil.copy2(path, target)

"""Decode ATT traces with explicit metadata and write complete viewer output.

``generate_att_outputs`` can decode shader-engine files in parallel worker processes;
their results reach the writer in the caller's order, so the output does not depend
on which worker finished first. Everything is written into a hidden staging
directory next to the destination and only moved into place once every trace has
been decoded and written: a failure leaves no half-written run behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .bindings import Decoder
from .code_index import CodeIndex
from .codegen import CodeObject, generate_code_artifacts
from .markers import correct_marker_timestamps, has_packed_marker_layout
from .rcv import (
    RcvOutputWriter,
    ShaderEngineFileWriter,
    ShaderEngineResult,
    normalize_output_formats,
    run_output_dir,
    write_code_json,
    write_source_snapshots,
    write_stats_csv,
)
from .records import TraceRecords

__all__ = ["AttTrace", "generate_att_outputs"]

_PARALLEL_MIN_BYTES = 1 << 20

WarningCallback = Callable[[Path, str], None]
ProgressCallback = Callable[[int, int], None]
RecordsCallback = Callable[["AttTrace", TraceRecords], None]


@dataclass(frozen=True)
class AttTrace:
    path: str | Path
    shader_engine: int
    run: int = 1


# --- decoding ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _WorkerSetup:
    lib_path: str | None
    document: dict  # the run's code.json document; each trace starts from it with cleared counts
    output_dir: Path
    write_json: bool
    keep_records: bool  # send each trace's records back to the caller (on_records)


_worker: tuple[Decoder, _WorkerSetup] | None = None


def _start_worker(setup: _WorkerSetup) -> None:
    global _worker
    _worker = (Decoder(setup.lib_path), setup)


def _decode_and_write(trace: AttTrace) -> tuple[ShaderEngineResult | None, dict, list[str], TraceRecords | None]:
    """In a worker: decode one trace and write its per-SE files.

    Returns (result, statistics, warnings, records if asked for); result is None when the trace
    reached PCs missing from code.json, whose new code rows must be numbered in trace order by
    the parent.
    """
    assert _worker is not None
    decoder, setup = _worker
    index = CodeIndex.from_document(setup.document, load_counts=False)
    known = len(index.entries)
    records = decoder.parse_file(trace.path, isa=index)
    warnings = [decoder.info_string(code) for code in records.info]
    result = ShaderEngineFileWriter(setup.output_dir, index, write_json=setup.write_json).write(
        trace.shader_engine, records
    )
    kept = records if setup.keep_records else None
    if len(index.entries) != known:
        return None, {}, warnings, kept
    return result, {pc: entry.counters() for pc, entry in index.entries.items() if entry.hitcount}, warnings, kept


class _SerialDecoder:
    """One handle for a run, opened on first use."""

    def __init__(self, lib_path: str | None, isa: CodeIndex | None):
        self.lib_path, self.isa, self.decoder = lib_path, isa, None

    def decode(self, path: Path) -> tuple[TraceRecords, list[str]]:
        if self.decoder is None:
            self.decoder = Decoder(self.lib_path)
        records = self.decoder.parse_file(path, isa=self.isa)
        return records, [self.decoder.info_string(code) for code in records.info]

    def close(self) -> None:
        if self.decoder is not None:
            self.decoder.close()


# --- publishing ------------------------------------------------------------------------------


@dataclass
class _StagedRun:
    final_dir: Path
    staging_dir: Path
    merge_into_existing: bool  # the destination is a user directory: add files, never replace it

    @property
    def stats_name(self) -> str:
        return f"stats_{self.final_dir.name}.csv"

    def publish(self) -> None:
        staged_stats = self.staging_dir / self.stats_name
        if staged_stats.exists():
            os.replace(staged_stats, self.final_dir.parent / self.stats_name)
        if self.merge_into_existing:
            self.final_dir.mkdir(parents=True, exist_ok=True)
            for item in self.staging_dir.iterdir():
                os.replace(item, self.final_dir / item.name)
            self.staging_dir.rmdir()
            return
        previous = None
        if self.final_dir.exists():
            previous = Path(tempfile.mkdtemp(prefix=f".{self.final_dir.name}.old.", dir=self.final_dir.parent))
            os.replace(self.final_dir, previous / self.final_dir.name)
        os.replace(self.staging_dir, self.final_dir)
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.staging_dir, ignore_errors=True)


def _stage(final_dir: Path, merge_into_existing: bool) -> _StagedRun:
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final_dir.name}.partial.", dir=final_dir.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's private 0700 would otherwise carry over to the result
    return _StagedRun(final_dir, staging, merge_into_existing)


# --- one run -------------------------------------------------------------------------------


class _Progress:
    def __init__(self, total: int, on_warning: WarningCallback | None, on_progress: ProgressCallback | None,
                 on_records: RecordsCallback | None):  # fmt: skip
        self.total, self.done = total, 0
        self.on_warning, self.on_progress, self.on_records = on_warning, on_progress, on_records

    def trace_done(self, trace: AttTrace, warnings: list[str], records: TraceRecords | None) -> None:
        if self.on_warning is not None:
            for text in warnings:
                self.on_warning(Path(trace.path), text)
        if self.on_records is not None and records is not None:
            self.on_records(trace, records)
        self.done += 1
        if self.on_progress is not None:
            self.on_progress(self.done, self.total)


def _decode_run(traces: list[AttTrace], writer: RcvOutputWriter, isa: CodeIndex | None, lib_path: str | None,
                jobs: int, correct_markers: bool, progress: _Progress) -> None:  # fmt: skip
    """Decode a run's traces and hand them to the writer in the given order."""
    serial = _SerialDecoder(lib_path, isa)
    # Workers write per-SE files themselves; that needs each SE once per run, code rows to
    # number lines with, and no step that must see every trace before writing (markers).
    parallel = (
        jobs > 1 and len(traces) > 1 and isa is not None and not correct_markers
        and len({t.shader_engine for t in traces}) == len(traces)
    )  # fmt: skip
    try:
        if parallel:
            Decoder(lib_path).close()  # report an unusable library here, not as a broken pool
            setup = _WorkerSetup(lib_path, isa.document, writer.output_dir, writer.write_json_files,
                                 keep_records=progress.on_records is not None)
            with ProcessPoolExecutor(min(jobs, len(traces)), initializer=_start_worker, initargs=(setup,)) as pool:
                for trace, (result, counters, warnings, records) in zip(traces, pool.map(_decode_and_write, traces)):
                    if result is None:
                        records, warnings = serial.decode(Path(trace.path))
                        writer.add_shader_records(trace.shader_engine, records)
                    else:
                        writer.add_result(result)
                        writer.code_index.add_counters(counters)
                    progress.trace_done(trace, warnings, records)
            return
        decoded = []
        for trace in traces:
            records, warnings = serial.decode(Path(trace.path))
            if correct_markers:
                decoded.append((trace.shader_engine, records))
            else:
                writer.add_shader_records(trace.shader_engine, records)
            progress.trace_done(trace, warnings, records)
        if correct_markers:
            correct_marker_timestamps(decoded, writer.code_index.document)
            for se, records in decoded:
                writer.add_shader_records(se, records)
    finally:
        serial.close()


# --- orchestration ---------------------------------------------------------------------------


def generate_att_outputs(
    traces: Iterable[AttTrace],
    *,
    code_index: CodeIndex | None = None,
    code_objects: Iterable[CodeObject] | None = None,
    source_paths: Iterable[str | Path] | None = None,
    output_dir: str | Path | None = None,
    lib_path: str | None = None,
    formats: str | Iterable[str] = "json,csv",
    base_name: str = "att",
    on_warning: WarningCallback | None = None,
    decode_markers: bool = True,
    jobs: int | None = None,
    on_progress: ProgressCallback | None = None,
    on_records: RecordsCallback | None = None,
) -> list[Path]:
    """Decode every trace and write one viewer directory per run id; returns those directories.

    Run directories are ``<base>/ui_output_<base_name><run>`` (``output_dir`` itself when it is
    given and there is one run); the stats CSV ``stats_<run dir name>.csv`` goes next to the run
    directory. ``jobs`` worker processes decode in parallel (default: one per CPU when the traces
    total at least 1 MiB, else none).
    ``on_progress(done, total)`` is called after each decoded trace, ``on_records(trace, records)``
    with each trace's records, in the given order whatever ``jobs`` is.
    """
    wanted = normalize_output_formats(formats)
    # absolute(), not resolve(): output goes next to the trace path given, even when it is a symlink.
    traces = [AttTrace(Path(t.path).expanduser().absolute(), int(t.shader_engine), int(t.run)) for t in traces]
    if not traces:
        raise ValueError("No ATT traces were provided.")
    if code_index is not None and code_objects is not None:
        raise ValueError("Provide only one of code_index or code_objects.")
    base_dir = Path(output_dir).expanduser().absolute() if output_dir is not None else Path(traces[0].path).parent

    snapshot_sources = list(source_paths) if source_paths is not None else []
    if code_objects is not None:
        artifacts = generate_code_artifacts(code_objects, lib_path=lib_path)
        code_index = artifacts.code_index
        if source_paths is None:
            snapshot_sources = list(artifacts.source_paths)

    runs = sorted({t.run for t in traces})
    if jobs is None:
        # Starting worker processes costs about as much as decoding a megabyte of trace.
        small = sum(os.path.getsize(t.path) for t in traces if os.path.isfile(t.path)) < _PARALLEL_MIN_BYTES
        jobs = 1 if small else (os.cpu_count() or 1)
    jobs = max(1, jobs)
    progress = _Progress(len(traces), on_warning, on_progress, on_records)
    staged: list[_StagedRun] = []
    try:
        for run in runs:
            run_traces = [t for t in traces if t.run == run]
            use_root = output_dir is not None and len(runs) == 1
            final_dir = run_output_dir(base_dir, base_name, run, use_root=use_root)
            stage = _stage(final_dir, merge_into_existing=use_root)
            staged.append(stage)

            # Each run starts from the static document with cleared counters.
            run_index = (
                CodeIndex.from_document(code_index.document, load_counts=False) if code_index is not None
                else CodeIndex([])
            )  # fmt: skip
            writer = RcvOutputWriter(stage.staging_dir, run_index, formats=wanted)
            isa = run_index if code_index is not None else None
            correct_markers = decode_markers and "json" in wanted and has_packed_marker_layout(run_index.document)

            _decode_run(run_traces, writer, isa, lib_path, jobs, correct_markers, progress)
            writer.finish()
            write_code_json(stage.staging_dir, run_index)
            if "csv" in wanted:
                write_stats_csv(stage.staging_dir, run_index, final_dir.name)
            if snapshot_sources:
                write_source_snapshots(snapshot_sources, stage.staging_dir)
    except BaseException:
        for stage in staged:
            stage.discard()
        raise
    for stage in staged:
        stage.publish()
    return [stage.final_dir for stage in staged]

"""Decode ATT traces with explicit metadata and write complete viewer output.

``generate_att_outputs`` decodes shader-engine files in parallel worker processes,
then hands them to the writer in the caller's order, so the output does not depend
on which worker finished first. Everything is written into a hidden staging
directory next to the destination and only moved into place once every trace has
been decoded and written: a failure leaves no half-written run behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .bindings import Decoder
from .code_index import CodeIndex
from .codegen import CodeObject, generate_code_artifacts
from .markers import correct_marker_timestamps, has_packed_marker_layout
from .rcv import (
    RcvOutputWriter,
    normalize_output_formats,
    run_output_dir,
    write_code_json,
    write_source_snapshots,
    write_stats_csv,
)
from .records import TraceRecords

__all__ = ["AttTrace", "generate_att_outputs"]

WarningCallback = Callable[[Path, str], None]
ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class AttTrace:
    path: str | Path
    shader_engine: int
    run: int = 1


# --- decoding --------------------------------------------------------------------------------

_worker_decoder: Decoder | None = None
_worker_isa: CodeIndex | None = None


def _start_worker(lib_path: str | None, isa: CodeIndex | None) -> None:
    global _worker_decoder, _worker_isa
    _worker_decoder = Decoder(lib_path)
    _worker_isa = isa


def _decode_in_worker(path: Path) -> tuple[TraceRecords, list[str]]:
    assert _worker_decoder is not None
    records = _worker_decoder.parse_file(path, isa=_worker_isa)
    return records, [_worker_decoder.info_string(code) for code in records.info]


def _decode_all(paths: list[Path], lib_path: str | None, isa: CodeIndex | None,
                jobs: int) -> Iterator[tuple[TraceRecords, list[str]]]:  # fmt: skip
    """Decoded records of each path, in the order of ``paths``."""
    if jobs <= 1 or len(paths) <= 1:
        with Decoder(lib_path) as decoder:
            for path in paths:
                records = decoder.parse_file(path, isa=isa)
                yield records, [decoder.info_string(code) for code in records.info]
        return
    Decoder(lib_path).close()  # report an unusable library here, not as a broken worker pool
    with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(lib_path, isa)) as pool:
        yield from pool.map(_decode_in_worker, paths)


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
    return _StagedRun(final_dir, staging, merge_into_existing)


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
) -> list[Path]:
    """Decode every trace and write one viewer directory per run id; returns those directories.

    Run directories are ``<base>/ui_output_<base_name><run>`` (``output_dir`` itself when it is
    given and there is one run); the stats CSV ``stats_<run dir name>.csv`` goes next to the run
    directory. ``jobs`` worker processes decode in parallel (default: one per CPU).
    ``on_progress(done, total)`` is called after each decoded trace.
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
        artifacts = generate_code_artifacts(code_objects)
        code_index = artifacts.code_index
        if source_paths is None:
            snapshot_sources = list(artifacts.source_paths)

    runs = sorted({t.run for t in traces})
    jobs = max(1, jobs if jobs is not None else (os.cpu_count() or 1))
    total, done = len(traces), 0
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
            paths = [Path(t.path) for t in run_traces]
            isa = run_index if code_index is not None else None
            correct_markers = decode_markers and "json" in wanted and has_packed_marker_layout(run_index.document)

            decoded: list[TraceRecords] = []
            for trace, (records, warnings) in zip(run_traces, _decode_all(paths, lib_path, isa, min(jobs, len(paths)))):
                for text in warnings:
                    if on_warning is not None:
                        on_warning(Path(trace.path), text)
                if correct_markers:
                    decoded.append(records)
                else:
                    writer.add_shader_records(trace.shader_engine, records)
                done += 1
                if on_progress is not None:
                    on_progress(done, total)
            if correct_markers:
                correct_marker_timestamps(
                    [(t.shader_engine, r) for t, r in zip(run_traces, decoded)], run_index.document
                )
                for trace, records in zip(run_traces, decoded):
                    writer.add_shader_records(trace.shader_engine, records)

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

"""Decode ATT traces and/or generate ROCprof Compute Viewer code metadata.

The ``rocprof-att`` command, an extra of this package: upstream's tool is ``att_tool.py``, which
here runs this module (as does ``python3 -m rocprof_trace_decoder``).

Inputs may mix .att traces, code objects (.out/.co/.hsaco), a code.json and
directories (their direct children are used, in name order). Code objects are disassembled by
llvm-objdump, or where it is not installed by the decoder library's built-in tables (mnemonics
and branch offsets, no other operands). rocprofv3 trace
names ``*_shader_engine_<se>_<run>.att`` give the shader engine and run; other
.att files get run 1 and the lowest free shader-engine id.

Output: <dir>/ui_output_<base-name><run>/ with the viewer files, and
<dir>/stats_ui_output_<base-name><run>.csv. Nothing is written when a trace fails.
--perfetto FILE also writes the decoded timeline as a Perfetto trace (ui.perfetto.dev).
Progress bars go to stderr when it is a terminal (not with --quiet).

Exit status:
  0  success
  1  invalid input: a path does not exist, cannot be read or has an unsupported type, nothing
     usable was given, code object ids / output formats are invalid, or --perfetto lacks traces
     or the perfetto package
  2  invalid command line
  3  the decoder library could not be loaded
  4  a trace could not be decoded (corrupt or unsupported trace data)
  5  code metadata could not be generated (code object, disassembler or code.json problem)
  130 interrupted
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .att import AttTrace, generate_att_outputs
from .bindings import DecoderError, DecoderLoadError
from .code_index import CodeIndex
from .code_object_paths import code_objects_from_paths
from .codegen import generate_code_artifacts
from .perfetto_export import TraceSource, require_perfetto, write_perfetto_trace
from .rcv import (
    DEFAULT_RUN_BASE_NAME,
    copy_source_snapshots,
    normalize_output_formats,
    write_code_json,
    write_source_snapshots,
)
from .records import DecoderStatus, TraceRecords

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_LIBRARY = 3
EXIT_DECODE = 4
EXIT_CODEGEN = 5
EXIT_INTERRUPTED = 130

CODE_OBJECT_SUFFIXES = {".out", ".co", ".hsaco"}
TRACE_NAME = re.compile(r"_shader_engine_(\d+)_(\d+)\.att$", re.IGNORECASE)


CODEGEN_HINT = ("hint: give the traced kernels' code.json instead of their code objects, or set ROCM_PATH to an "
                "installation whose llvm-objdump knows the target")  # fmt: skip
# Where a crashing LLVM tool's backtrace starts: nothing from there on helps the user.
LLVM_CRASH_REPORT = ("PLEASE submit a bug report", "Stack dump:")


def without_crash_report(message: str) -> str:
    """The message up to a crash backtrace, each line once."""
    lines: list[str] = []
    for line in message.splitlines():
        if line.startswith(LLVM_CRASH_REPORT):
            break
        if line not in lines:
            lines.append(line)
    return "\n".join(lines)


class ToolError(Exception):
    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Inputs:
    traces: list[Path] = field(default_factory=list)
    code_objects: list[Path] = field(default_factory=list)
    code_json: Path | None = None


def _classify(path: Path, inputs: Inputs, *, from_directory: bool) -> None:
    name = path.name.lower()
    if name.endswith(".att"):
        inputs.traces.append(path)
    elif name == "code.json":
        inputs.code_json = path  # the last one seen wins
    elif path.suffix.lower() in CODE_OBJECT_SUFFIXES:
        inputs.code_objects.append(path)
    elif not from_directory:
        raise ToolError(
            f"Unsupported input type: {path}. Expected .att, code.json, or a code object (.out, .co, .hsaco).",
            EXIT_BAD_INPUT,
        )


def _unreadable(path: Path, exc: OSError) -> ToolError:
    return ToolError(f"Input is not readable: {path}: {exc.strerror or exc}", EXIT_BAD_INPUT)


def _check_readable(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise _unreadable(path, exc) from exc


def discover_inputs(arguments: list[str]) -> Inputs:
    inputs = Inputs()
    for argument in arguments:
        path = Path(argument).expanduser().absolute()
        if not path.exists():
            raise ToolError(f"Input does not exist: {path}", EXIT_BAD_INPUT)
        if path.is_dir():
            try:
                children = sorted(path.iterdir())
            except OSError as exc:
                raise _unreadable(path, exc) from exc
            for child in children:
                if child.is_file():
                    _classify(child, inputs, from_directory=True)
        else:
            _classify(path, inputs, from_directory=False)
    for path in [*inputs.traces, *inputs.code_objects, *filter(None, [inputs.code_json])]:
        _check_readable(path)
    if not (inputs.traces or inputs.code_objects or inputs.code_json):
        raise ToolError("No .att files, code.json, or code object files were provided or discovered.", EXIT_BAD_INPUT)
    return inputs


def traces_from_names(paths: list[Path]) -> list[AttTrace]:
    """Shader engine and run from rocprofv3 names; other files: run 1, lowest free SE id."""
    named = {path: TRACE_NAME.search(path.name) for path in paths}
    claimed = {int(m.group(1)) for m in named.values() if m and int(m.group(2)) == 1}
    traces = []
    next_free = 0
    for path in paths:
        match = named[path]
        if match:
            traces.append(AttTrace(path, int(match.group(1)), int(match.group(2))))
            continue
        while next_free in claimed:
            next_free += 1
        claimed.add(next_free)
        traces.append(AttTrace(path, next_free, 1))
    return traces


class ProgressBar:
    """One-line bars on a stream (stderr), drawn only when it is a terminal and not quiet."""

    WIDTH = 30

    def __init__(self, stream=None, *, quiet: bool = False):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and self.stream.isatty()
        self._shown = 0

    def step(self, label: str, unit: str, total: int) -> Callable[[int, int], None]:
        """Draws the empty bar of a step and returns its update(done, total) callback."""
        update = lambda done, total: self._draw(label, unit, done, total)  # noqa: E731
        update(0, total)
        return update

    def _draw(self, label: str, unit: str, done: int, total: int) -> None:
        if not self.enabled or total < 1:
            return
        filled = self.WIDTH * done // total
        line = f"{label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total} {unit}"
        self.stream.write("\r" + line.ljust(self._shown))
        self._shown = len(line)
        if done == total:
            self.clear()
        self.stream.flush()

    def clear(self) -> None:
        """Erases a bar left on the line (a step that failed), so messages start on a clean line."""
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0


def _load_code_json(path: Path) -> CodeIndex:
    try:
        return CodeIndex.from_code_json(path, load_counts=False)
    except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise ToolError(f"Cannot read {path}: {exc}", EXIT_CODEGEN) from exc


def run(args: argparse.Namespace, progress: ProgressBar) -> int:
    formats = normalize_output_formats(args.formats)
    inputs = discover_inputs(args.files)
    output_dir = Path(args.dir).expanduser().absolute() if args.dir else None
    perfetto_path = Path(args.perfetto).expanduser().absolute() if args.perfetto else None
    if perfetto_path is not None:
        if not inputs.traces:
            raise ToolError("--perfetto needs .att traces to decode.", EXIT_BAD_INPUT)
        if not perfetto_path.parent.is_dir():
            raise ToolError(f"Cannot write {perfetto_path}: no directory {perfetto_path.parent}", EXIT_BAD_INPUT)
        try:
            require_perfetto()
        except ImportError as exc:
            raise ToolError(str(exc), EXIT_BAD_INPUT) from exc

    code_index = None
    source_paths: list[Path] = []
    if inputs.code_objects:
        try:
            code_objects = code_objects_from_paths(inputs.code_objects)
        except ValueError as exc:
            raise ToolError(str(exc), EXIT_BAD_INPUT) from exc
        try:
            on_code_object = progress.step("Generating code metadata", "code objects", len(code_objects))
            artifacts = generate_code_artifacts(code_objects, on_progress=on_code_object, lib_path=args.lib)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ToolError(f"cannot generate code metadata: {without_crash_report(str(exc))}\n{CODEGEN_HINT}",
                            EXIT_CODEGEN) from exc  # fmt: skip
        code_index, source_paths = artifacts.code_index, list(artifacts.source_paths)
    elif inputs.code_json is not None:
        code_index = _load_code_json(inputs.code_json)

    if not inputs.traces:
        if inputs.code_objects or output_dir is not None:
            target = output_dir or inputs.code_objects[0].parent
            target.mkdir(parents=True, exist_ok=True)
            write_code_json(target, code_index)
            if source_paths:
                write_source_snapshots(source_paths, target)
            elif inputs.code_json is not None:
                copy_source_snapshots(inputs.code_json.parent, target)
            print(target)
        else:
            print(inputs.code_json.parent)
        return EXIT_OK

    base_name = args.base_name if args.base_name is not None else Path(args.files[0]).expanduser().absolute().parent.name
    traces = traces_from_names(inputs.traces)
    decoded: list[TraceSource] = []

    def warn(path: Path, text: str) -> None:
        progress.clear()
        print(f"Warning: {path}: {text}", file=sys.stderr)

    def keep(trace: AttTrace, records: TraceRecords) -> None:
        decoded.append(TraceSource(trace.run, trace.shader_engine, records))

    run_dirs = generate_att_outputs(
        traces,
        code_index=code_index,
        source_paths=source_paths or None,
        output_dir=output_dir,
        lib_path=args.lib,
        formats=formats,
        base_name=base_name or DEFAULT_RUN_BASE_NAME,
        on_warning=warn,
        decode_markers=args.decode_markers,
        jobs=args.jobs,
        on_progress=progress.step("Decoding and writing", "shader-engine traces", len(traces)),
        on_records=keep if perfetto_path is not None else None,
    )
    if perfetto_path is not None:
        on_engine = progress.step("Writing Perfetto trace", "shader engines", len(decoded))
        try:
            write_perfetto_trace(perfetto_path, decoded, code_index, on_progress=on_engine)
        except OSError as exc:
            raise ToolError(f"Cannot write {perfetto_path}: {exc.strerror or exc}", EXIT_BAD_INPUT) from exc
    if code_index is not None and not inputs.code_objects and inputs.code_json is not None:
        for run_dir in run_dirs:
            copy_source_snapshots(inputs.code_json.parent, run_dir)
    for run_dir in run_dirs:
        print(run_dir)
    if perfetto_path is not None:
        print(perfetto_path)
    return EXIT_OK


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Decode ATT traces and/or generate ROCprof Compute Viewer code metadata.",
        epilog=__doc__.split("Exit status:", 1)[1].join(["Exit status:", ""]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", help=".att traces, code objects (.out/.co/.hsaco), code.json, directories")
    parser.add_argument("-d", "--dir", dest="dir", help="output directory (the run directory itself for one run)")
    parser.add_argument("--lib", help="path of librocprof-trace-decoder.so")
    parser.add_argument("--formats", default="json,csv", help="json, csv or both (default: json,csv)")
    parser.add_argument("--base-name", help="run directory base name (default: name of the first input's directory)")
    parser.add_argument("--no-decode-markers", dest="decode_markers", action="store_false",
                        help="leave packed marker values and times in shader data as decoded")  # fmt: skip
    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help="parallel decoder processes (default: one per CPU from 1 MiB of traces)")  # fmt: skip
    parser.add_argument("--perfetto", metavar="FILE",
                        help="also write a Perfetto trace of the decoded waves and instructions")  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line tool; ``prog`` names it in usage messages (default: the script's name)."""
    args = build_parser(prog).parse_args(argv)
    progress = ProgressBar(quiet=args.quiet)
    try:
        try:
            return run(args, progress)
        finally:
            progress.clear()  # messages below start on their own line
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except DecoderLoadError as exc:
        print(f"error: the decoder library could not be loaded: {exc}", file=sys.stderr)
        return EXIT_LIBRARY
    except DecoderError as exc:
        print(f"error: a trace could not be decoded: {exc}", file=sys.stderr)
        if exc.status == DecoderStatus.ERROR_NOT_IMPLEMENTED:
            print("hint: give the code.json or code objects of the traced kernels", file=sys.stderr)
        return EXIT_DECODE
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

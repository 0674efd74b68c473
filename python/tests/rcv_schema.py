"""What ROCprof Compute Viewer 0.2.0 reads from a JSON viewer folder (PYTHON.md section 7.1),
as a checker: ``viewer_schema_problems(folder)`` lists every way the folder would be rejected,
skipped with a warning or misread by the viewer's JSON import path."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rocprof_trace_decoder.records import InstCategory, WaveStateType

_U32_MAX = 0xFFFFFFFF
_CATEGORIES = set(range(InstCategory.LAST))
_WAVE_STATES = set(range(WaveStateType.LAST))
_FUNCMAP_KINDS = {"f", "function", "func", "k", "kernel", "u", "user", "user_scope", "userscope", "p", "point"}


def _is_int(value) -> bool:
    return type(value) is int


def _int_columns(rows, width: int) -> list[tuple] | None:
    """The first ``width`` columns of a table whose rows hold at least ``width`` integers, else None.
    Checked column-wise: the large captures hold millions of values."""
    if not (isinstance(rows, list) and all(type(row) is list and len(row) >= width for row in rows)):
        return None
    if not rows:
        return [()] * width
    columns = list(zip(*rows))[:width]
    return columns if {type(value) for column in columns for value in column} == {int} else None


def _parses_as_index(key: str) -> bool:
    """The viewer converts these keys with std::stoi."""
    return re.fullmatch(r"-?\d+", key) is not None


class _Checker:
    def __init__(self, folder: Path):
        self.folder = folder
        self.problems: list[str] = []
        self.code_lines: set[int] = set()

    def fail(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def load(self, name: str):
        path = self.folder / name
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            self.fail(name, f"cannot be read as JSON ({exc})")
            return None

    # -- filenames.json: the file that makes a directory a viewer folder

    def filenames(self) -> dict:
        document = self.load("filenames.json")
        if not isinstance(document, dict):
            if document is not None:
                self.fail("filenames.json", "is not an object")
            return {}
        where = "filenames.json"
        if not _is_int(document.get("gfxip")):
            self.fail(where, "gfxip is not an integer")
        if not isinstance(document.get("gfxv"), str):
            self.fail(where, "gfxv is not a string")
        for flag in ("thread_trace", "pc_sampling"):
            if flag in document and not isinstance(document[flag], bool):
                self.fail(where, f"{flag} is not a boolean")
        names = document.get("counter_names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.fail(where, "counter_names is not a list of strings")
        return document

    def wave_entries(self, document: dict) -> list[tuple[int, list]]:
        """(se, [file, begin, end]) of every leaf of wave_filenames."""
        entries = []
        tree = document.get("wave_filenames", {})
        if not isinstance(tree, dict):
            self.fail("filenames.json", "wave_filenames is not an object")
            return entries

        def walk(node, path: list[str]) -> None:
            for key, child in node.items():
                if not _parses_as_index(key):
                    self.fail("filenames.json", f"wave_filenames key {'/'.join(path + [key])} is not an integer")
                    continue
                if len(path) < 3:
                    if isinstance(child, dict):
                        walk(child, path + [key])
                    else:
                        self.fail("filenames.json", f"wave_filenames/{'/'.join(path + [key])} is not an object")
                elif (isinstance(child, list) and len(child) == 3 and isinstance(child[0], str)
                      and _is_int(child[1]) and _is_int(child[2])):  # fmt: skip
                    entries.append((int(path[0]), child))
                else:
                    self.fail("filenames.json", f"wave_filenames/{'/'.join(path + [key])} is not [file, begin, end]")

        walk(tree, [])
        return entries

    def chunk_entries(self, document: dict, key: str, minimum_items: int) -> list[str]:
        files = []
        table = document.get(key, {})
        if not isinstance(table, dict):
            self.fail("filenames.json", f"{key} is not an object")
            return files
        for se, entries in table.items():
            if not _parses_as_index(se) or not isinstance(entries, list):
                self.fail("filenames.json", f"{key}/{se} is not a list under an integer key")
                continue
            for entry in entries:
                if not (isinstance(entry, list) and len(entry) >= minimum_items and isinstance(entry[0], str)):
                    self.fail("filenames.json", f"{key}/{se} entry {entry!r} has no file name")
                elif len(entry) >= 3 and not (_is_int(entry[1]) and _is_int(entry[2])):
                    self.fail("filenames.json", f"{key}/{se} entry {entry!r} has a non-integer time range")
                else:
                    files.append(entry[0])
        return files

    # -- code.json

    def code(self) -> bool:
        if not (self.folder / "code.json").is_file():
            return False
        document = self.load("code.json")
        if not isinstance(document, dict) or not isinstance(document.get("code"), list):
            self.fail("code.json", "has no 'code' list")
            return False
        header = document.get("header")
        if header is not None and not isinstance(header, (str, list)):
            self.fail("code.json", "header is neither a string nor a list")
        previous_line = 0
        for number, row in enumerate(document["code"]):
            where = f"code.json row {number}"
            if not isinstance(row, list) or len(row) < 10:
                self.fail(where, "has fewer than 10 columns")
                continue
            text, line, source = row[0], row[2], row[3]
            if not isinstance(text, str):
                self.fail(where, "ISA text is not a string")
            if not _is_int(line) or line <= previous_line:
                self.fail(where, f"line {line!r} is not an integer above the previous row's")
            else:
                previous_line = line
                self.code_lines.add(line)
            if source is not None and not isinstance(source, str):
                self.fail(where, "source is neither a string nor null")
            if not all(_is_int(value) and value >= 0 for value in row[4:10]):
                self.fail(where, "codeobj, vaddr or counters are not non-negative integers")
        # The viewer indexes a dense vector by line number.
        if self.code_lines and max(self.code_lines) > 4 * len(document["code"]) + 1024:
            self.fail("code.json", "line numbers are far from dense")
        for row in document.get("sqtt_funcmap", []):
            if not (isinstance(row, list) and len(row) >= 4 and _is_int(row[0]) and row[0] > 0
                    and _is_int(row[1]) and 0 <= row[1] <= _U32_MAX and isinstance(row[2], str)
                    and row[2].lower() in _FUNCMAP_KINDS and isinstance(row[3], str) and row[3]
                    and (len(row) < 5 or row[4] is None or isinstance(row[4], str))):  # fmt: skip
                self.fail("code.json", f"sqtt_funcmap row {row!r} would be skipped")
        return bool(document["code"])

    # -- wave files

    def wave(self, name: str) -> tuple[int, int] | None:
        """Checks one wave file; returns its (begin, end)."""
        document = self.load(name)
        if document is None:
            return None
        wave = document.get("wave") if isinstance(document, dict) else None
        if not isinstance(wave, dict):
            self.fail(name, "has no 'wave' object")
            return None
        for key in ("id", "begin", "end"):
            if not _is_int(wave.get(key)):
                self.fail(name, f"wave.{key} is not an integer")
        for key in ("cu", "dispatcher", "me_id", "pipe_id", "workgroup_id", "cluster_id"):
            if key in wave and not _is_int(wave[key]):
                self.fail(name, f"wave.{key} is not an integer")
        instructions = _int_columns(wave.get("instructions", []), 5)
        if instructions is None:
            self.fail(name, "instructions are not [time, type, stall, duration, line] integer rows")
        elif not set(instructions[1]) <= _CATEGORIES:
            self.fail(name, f"instruction categories {sorted(set(instructions[1]) - _CATEGORIES)} are unknown")
        elif not set(instructions[4]) <= self.code_lines:
            missing = sorted(set(instructions[4]) - self.code_lines)[:5]
            self.fail(name, f"instructions reference lines {missing} missing from code.json")
        timeline = _int_columns(wave.get("timeline", []), 2)
        if timeline is None or not set(timeline[0]) <= _WAVE_STATES or min(timeline[1], default=0) < 0:
            self.fail(name, "timeline is not a list of [state, duration]")
        waitcnt = wave.get("waitcnt", [])
        if not isinstance(waitcnt, list):
            self.fail(name, "wave.waitcnt is not a list")
        if "info" in wave and not (isinstance(wave["info"], dict) and all(_is_int(v) for v in wave["info"].values())):
            self.fail(name, "wave.info is not an object of integers")
        # The viewer finds code.json by cutting the wave file's path at its last "se".
        full = str(self.folder / name)
        if not Path(full[: full.rfind("se")] + "code.json").is_file():
            self.fail(name, "the viewer would not find code.json next to it")
        if _is_int(wave.get("begin")) and _is_int(wave.get("end")):
            return wave["begin"], wave["end"]
        return None

    # -- the other files

    def occupancy(self) -> tuple[bool, set[int]]:
        """(has rows, SE ids) of occupancy.json; absent is allowed."""
        if not (self.folder / "occupancy.json").is_file():
            return False, set()
        document = self.load("occupancy.json")
        if not isinstance(document, dict):
            self.fail("occupancy.json", "is not an object")
            return False, set()
        dispatches = document.get("dispatches", {})
        if not (isinstance(dispatches, dict) and all(_parses_as_index(k) and isinstance(v, str)
                                                     for k, v in dispatches.items())):  # fmt: skip
            self.fail("occupancy.json", "dispatches is not an object of id -> name")
        if "version" in document and not str(document["version"]).startswith("3"):
            self.fail("occupancy.json", "version does not start with 3")
        has_rows, shader_engines = False, set()
        for key, rows in document.items():
            if not (key.isdigit() and isinstance(rows, list)):
                continue
            shader_engines.add(int(key))
            if _int_columns(rows, 6) is None:
                self.fail("occupancy.json", f"SE {key} rows are not rows of at least 6 integers")
            has_rows = has_rows or bool(rows)
        for se, entries in document.get("events", {}).items():
            for entry in entries:
                if not (isinstance(entry, dict) and entry.get("kind") in ("event", "dispatch")
                        and _is_int(entry.get("time"))):  # fmt: skip
                    self.fail("occupancy.json", f"events/{se} entry {entry!r} is not an event or dispatch")
                    break
        return has_rows, shader_engines

    def realtime(self) -> None:
        if not (self.folder / "realtime.json").is_file():
            return
        document = self.load("realtime.json")
        if not isinstance(document, dict) or not _is_int(document.get("metadata", {}).get("frequency")):
            self.fail("realtime.json", "metadata.frequency is not an integer")
            return
        for key, samples in document.items():
            if key == "metadata":
                continue
            if not (re.fullmatch(r"SE\d+", key) and _int_columns(samples, 2) is not None):
                self.fail("realtime.json", f"{key} is not an SE<n> list of [shader_clock, realtime_clock]")

    def perf_counters(self, shader_engines: set[int]) -> None:
        for se in range(max(shader_engines, default=-1) + 1):
            name = f"se{se}_perfcounter.json"
            if (self.folder / name).is_file():
                document = self.load(name)
                rows = document.get("data") if isinstance(document, dict) else None
                if _int_columns(rows, 7) is None:
                    self.fail(name, "data is not a list of 7-value rows")

    def shaderdata(self, name: str) -> None:
        document = self.load(name)
        rows = document.get("records") if isinstance(document, dict) else None
        if _int_columns(rows, 6) is None:
            self.fail(name, "records is not a list of rows of at least 6 integers")

    def other_simd(self, name: str) -> None:
        document = self.load(name)
        if not isinstance(document, dict):
            return
        schema = document.get("instructions_schema", ["time", "duration"])
        if not (isinstance(schema, list) and "time" in schema and "duration" in schema):
            self.fail(name, "instructions_schema names no time and duration columns")
            return
        width = max(schema.index("time"), schema.index("duration")) + 1
        rows = document.get("instructions")
        if _int_columns(rows, width) is None:
            self.fail(name, "instructions rows do not match instructions_schema")

    def snapshots(self) -> None:
        if not (self.folder / "snapshots.json").is_file():
            return

        def walk(node, path: str) -> None:
            for key, child in node.items():
                source = f"{path.rstrip('/')}/{key}" if path else key  # the top key "/" starts absolute paths
                if isinstance(child, dict):
                    walk(child, source)
                elif not (isinstance(child, str) and (self.folder / child).is_file()):
                    self.fail("snapshots.json", f"{source} does not name a file in the folder")

        document = self.load("snapshots.json")
        if isinstance(document, dict):
            walk(document, "")
        else:
            self.fail("snapshots.json", "is not an object")


def viewer_schema_problems(folder: Path) -> list[str]:
    check = _Checker(Path(folder))
    if not (check.folder / "filenames.json").is_file():
        return ["filenames.json: missing, so the viewer does not recognise the folder"]
    filenames = check.filenames()
    has_code = check.code()
    waves = check.wave_entries(filenames)
    wave_shader_engines = set()
    for se, (name, begin, end) in waves:
        wave_shader_engines.add(se)
        if not (check.folder / name).is_file():
            check.fail("filenames.json", f"wave file {name} does not exist")
        elif check.wave(name) != (begin, end):
            check.fail("filenames.json", f"{name}: begin/end differ from the wave file")
    for name in check.chunk_entries(filenames, "shaderdata_filenames", 3):
        if (check.folder / name).is_file():
            check.shaderdata(name)
        else:
            check.fail("filenames.json", f"shaderdata file {name} does not exist")
    for name in check.chunk_entries(filenames, "other_simd_filenames", 1):
        if (check.folder / name).is_file():
            check.other_simd(name)
        else:
            check.fail("filenames.json", f"other-SIMD file {name} does not exist")
    has_occupancy, occupancy_shader_engines = check.occupancy()
    check.perf_counters(wave_shader_engines | occupancy_shader_engines)
    check.realtime()
    check.snapshots()
    if not (waves or has_occupancy or has_code):
        check.problems.append("Input did not produce usable viewer data.")
    return check.problems

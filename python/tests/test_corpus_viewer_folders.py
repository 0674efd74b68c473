"""att_tool.py over every corpus example, the way a user runs it on a capture directory: the viewer
folder must be complete, readable by the viewer, and hold exactly what the reference decoder
decoded (the golden records)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import PYTHON_DIR, golden_examples, load_golden, reference_code_json, require_corpus, se_files
from rcv_schema import viewer_schema_problems

from rocprof_trace_decoder.code_index import is_label_text

TOOL = PYTHON_DIR / "att_tool.py"
ROCPROFV3_TRACE_NAME = re.compile(r"_shader_engine_(\d+)_(\d+)\.att$")
# The writer leaves out waves without instructions unless their timeline says something.
MIN_TIMELINE_STATES_WITHOUT_INSTRUCTIONS = 3


def prepare_capture(example: str, directory: Path) -> int:
    """A rocprofv3-like capture directory: SE files under the capture's own rocprofv3 names where the
    corpus recorded them (else ``trace_shader_engine_<se>_1.att``) and a code.json. Returns the run id."""
    example_dir = require_corpus() / example
    meta = json.loads((example_dir / "meta.json").read_text())
    original = {t["file"]: Path(t["source_path"]).name for t in meta["traces"] if t.get("source_path")}
    directory.mkdir(parents=True)
    runs = set()
    for se, path in se_files(example_dir):
        name = original.get(path.name, "")
        if not ROCPROFV3_TRACE_NAME.search(name):  # no capture name, or an older tool's
            name = f"trace_shader_engine_{se}_1.att"
        match = ROCPROFV3_TRACE_NAME.search(name)
        assert match and int(match.group(1)) == se, name
        runs.add(int(match.group(2)))
        (directory / name).symlink_to(path)
    (directory / "code.json").write_text(json.dumps(reference_code_json(example_dir), indent=2))
    (run,) = runs
    return run


class GoldenRecords:
    """Every record the reference decoder delivered for an example, per shader engine."""

    def __init__(self, example: str):
        self.by_se: dict[int, dict[str, list]] = {}
        for entry in load_golden(example)["per_se"]:
            records = defaultdict(list)
            for kind, _count, payload in entry["callbacks"]:
                if kind != "GFXIP":
                    records[kind].extend(payload)
            self.by_se[int(entry["input"][0][2:-4])] = records

    def expected_wave_files(self) -> dict[str, dict]:
        """File name -> golden wave, numbered per (SE, SIMD, slot) over the written waves."""
        files = {}
        for se, records in self.by_se.items():
            numbers = Counter()
            for wave in records["WAVE"]:
                if wave["instructions"] or len(wave["timeline"]) >= MIN_TIMELINE_STATES_WITHOUT_INSTRUCTIONS:
                    key = (wave["simd"], wave["wave_id"])
                    files[f"se{se}_sm{key[0]}_sl{key[1]}_wv{numbers[key]}.json"] = wave
                    numbers[key] += 1
        return files

    def instructions(self):
        for records in self.by_se.values():
            for wave in records["WAVE"]:
                yield from wave["instructions"]


def run_att_tool(capture: Path, lib: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ROCPROF_TRACE_DECODER_LIB=lib)
    return subprocess.run([sys.executable, str(TOOL), str(capture)], capture_output=True, text=True, env=env,
                          timeout=600)  # fmt: skip


def expected_file_names(golden: GoldenRecords) -> set[str]:
    names = {"filenames.json", "occupancy.json", "code.json", *golden.expected_wave_files()}
    for se, records in golden.by_se.items():
        if records["REALTIME"]:
            names.add("realtime.json")
        if records["INST_OTHER_SIMD"]:
            names.add(f"other_simd_se{se}_0.json")
        if records["SHADERDATA"]:
            names.add(f"shaderdata_{se}_0.json")
        if records["PERFEVENT"]:
            names.add(f"se{se}_perfcounter.json")
    return names


def wave_file_problems(run_dir: Path, golden: GoldenRecords, line_of_pc: dict[tuple[int, int], int]) -> list[str]:
    problems = []
    for name, want in golden.expected_wave_files().items():
        document = json.loads((run_dir / name).read_text())
        wave = document["wave"]
        got = (wave["cu"], wave["simd"], wave["slot"], wave["begin"], wave["end"], wave["timeline"],
               wave["instructions"])  # fmt: skip
        expected = (want["cu"], want["simd"], want["wave_id"], want["begin_time"], want["end_time"], want["timeline"],
                    [[time, category, stall, duration, line_of_pc.get((code_object, address))]
                     for category, stall, duration, time, address, code_object in want["instructions"]])  # fmt: skip
        if got != expected:
            problems.append(f"{name} differs from the decoded wave")
        if not document["num_insts"] == document["num_stitched"] == len(want["instructions"]):
            problems.append(f"{name}: num_insts/num_stitched are not the instruction count")
    return problems


def statistics_problems(capture: Path, run_dir: Path, golden: GoldenRecords) -> list[str]:
    """The stats CSV and code.json counters against the decoded instructions (PC (0,0) never counts)."""
    want_hits, want_latency, want_stall = Counter(), Counter(), Counter()
    for category, stall, duration, _time, address, code_object in golden.instructions():
        if (address, code_object) != (0, 0):
            want_hits[(code_object, address)] += 1
            want_latency[(code_object, address)] += max(stall, duration)
            want_stall[(code_object, address)] += stall
    with (capture / f"stats_{run_dir.name}.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    got_hits, got_latency, got_stall = Counter(), Counter(), Counter()
    for row in rows:
        pc = (int(row["CodeObj"]), int(row["Vaddr"]))
        got_hits[pc] += int(row["Hitcount"])
        got_latency[pc] += int(row["Latency"])
        got_stall[pc] += int(row["Stall"])
    problems = []
    for what, got, want in (("Hitcount", got_hits, want_hits), ("Latency", got_latency, want_latency),
                            ("Stall", got_stall, want_stall)):  # fmt: skip
        if +got != +want:
            problems.append(f"stats CSV {what} per PC differs from the decoded instructions "
                            f"(sum {sum(got.values())}, decoded {sum(want.values())})")  # fmt: skip
    code_rows = json.loads((run_dir / "code.json").read_text())["code"]
    if sum(row[6] for row in code_rows) != sum(want_hits.values()):
        problems.append("code.json Hit column does not sum to the decoded instruction count")
    return problems


def summary_file_problems(run_dir: Path, golden: GoldenRecords) -> list[str]:
    problems = []
    occupancy = json.loads((run_dir / "occupancy.json").read_text())
    realtime_path = run_dir / "realtime.json"
    realtime = json.loads(realtime_path.read_text()) if realtime_path.exists() else {}
    for se, records in golden.by_se.items():
        rows = [row[:5] for row in occupancy.get(str(se), [])]
        if rows != [[time, cu, simd, wave_id, start] for _a, _c, time, _r, cu, simd, wave_id, start, *_ in
                    records["OCCUPANCY"]]:  # fmt: skip
            problems.append(f"occupancy.json SE {se}: {len(rows)} rows, decoded {len(records['OCCUPANCY'])}")
        if realtime and realtime.get(f"SE{se}") != [[shader, real] for shader, real, _ in records["REALTIME"]]:
            problems.append(f"realtime.json SE{se} differs from the decoded samples")
        if records["INST_OTHER_SIMD"]:
            other = json.loads((run_dir / f"other_simd_se{se}_0.json").read_text())
            want = [[time, cycles, category] for _size, time, cycles, _wgp, category in records["INST_OTHER_SIMD"]]
            if other["instructions"] != want or other["instructions_count"] != len(want):
                problems.append(f"other_simd_se{se}_0.json differs from the decoded records")
    return problems


@pytest.mark.decoding
@pytest.mark.parametrize("example", golden_examples())
def test_att_tool_writes_a_complete_viewer_folder(example, decoder_lib, tmp_path):
    capture = tmp_path / "results" / "host"  # rocprofv3 writes <output directory>/<host name>/
    run = prepare_capture(example, capture)
    result = run_att_tool(capture, decoder_lib)
    assert result.returncode == 0, result.stderr
    run_dir = capture / f"ui_output_results{run}"  # base name: the directory holding the input
    assert result.stdout.split() == [str(run_dir)]

    golden = GoldenRecords(example)
    # The tool warns once for each INFO record of the decode ("Warning: <file>: <text>"), and
    # says nothing else on stderr.
    warnings = result.stderr.splitlines()
    assert all(line.startswith("Warning: ") and ".att: " in line for line in warnings), result.stderr
    want = [text for records in golden.by_se.values() for _code, text in records["INFO"]]
    assert sorted(line.split(".att: ", 1)[1] for line in warnings) == sorted(want)
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(expected_file_names(golden))
    assert (capture / f"stats_{run_dir.name}.csv").is_file()
    assert viewer_schema_problems(run_dir) == []

    code = json.loads((run_dir / "code.json").read_text())["code"]
    line_of_pc = {(row[4], row[5]): row[2] for row in code if not is_label_text(row[0])}
    assert wave_file_problems(run_dir, golden, line_of_pc) == []
    assert summary_file_problems(run_dir, golden) == []
    assert statistics_problems(capture, run_dir, golden) == []

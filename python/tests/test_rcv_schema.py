"""The viewer-schema checker accepts what the viewer opens and catches what it would reject."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import RCV_EXAMPLES
from rcv_schema import viewer_schema_problems

SMALL_EXAMPLE = "gfx1100/profile_gemm_run_0"
WAVE = "se0_sm0_sl0_wv0.json"


@pytest.mark.parametrize("example", RCV_EXAMPLES)
def test_folders_the_viewer_opened_pass(example, corpus):
    assert viewer_schema_problems(corpus / "rcv_reference" / example / "ui_output_att1") == []


@pytest.fixture
def folder(corpus, tmp_path) -> Path:
    copy = tmp_path / "ui_output_att1"
    shutil.copytree(corpus / "rcv_reference" / SMALL_EXAMPLE / "ui_output_att1", copy)
    return copy


def edit(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def test_a_copy_passes_before_it_is_broken(folder):
    assert viewer_schema_problems(folder) == []


def test_missing_filenames_json(folder):
    (folder / "filenames.json").unlink()
    assert viewer_schema_problems(folder) == ["filenames.json: missing, so the viewer does not recognise the folder"]


def test_missing_wave_file(folder):
    (folder / WAVE).unlink()
    assert viewer_schema_problems(folder) == [f"filenames.json: wave file {WAVE} does not exist"]


def test_wave_begin_differs_from_its_index_entry(folder):
    edit(folder / WAVE, lambda d: d["wave"].update(begin=d["wave"]["begin"] + 1))
    assert viewer_schema_problems(folder) == [f"filenames.json: {WAVE}: begin/end differ from the wave file"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: w["instructions"][0].__setitem__(4, 10**6), "missing from code.json"),
        (lambda w: w["instructions"][0].__setitem__(1, 99), "categories [99] are unknown"),
        (lambda w: w["instructions"][0].__setitem__(0, "12"), "integer rows"),
        (lambda w: w["instructions"].append([1, 2, 3]), "integer rows"),
        (lambda w: w["timeline"].append([7, 1]), "timeline"),
        (lambda w: w.update(id="0"), "wave.id is not an integer"),
        (lambda w: w.update(waitcnt={}), "waitcnt"),
    ],
)
def test_broken_wave_content(folder, change, message):
    edit(folder / WAVE, lambda d: change(d["wave"]))
    problems = viewer_schema_problems(folder)
    assert len(problems) == 1 and problems[0].startswith(WAVE) and message in problems[0], problems


def test_code_json_must_sit_next_to_the_wave_files(folder):
    (folder / "code.json").unlink()
    problems = viewer_schema_problems(folder)
    assert problems and all("code.json" in p for p in problems)
    assert f"{WAVE}: the viewer would not find code.json next to it" in problems


@pytest.mark.parametrize(
    "name, change, message",
    [
        ("filenames.json", lambda d: d.update(gfxip="11"), "gfxip is not an integer"),
        ("filenames.json", lambda d: d["wave_filenames"].update(x={}), "key x is not an integer"),
        ("filenames.json", lambda d: d["other_simd_filenames"]["0"].append([5]), "has no file name"),
        ("filenames.json", lambda d: d["other_simd_filenames"]["0"].append(["nothing.json", 0, 1]),
         "other-SIMD file nothing.json does not exist"),  # fmt: skip
        ("occupancy.json", lambda d: d["0"].append([1, 2, 3]), "at least 6 integers"),
        ("occupancy.json", lambda d: d["events"].update({"0": [{"time": 1}]}), "not an event or dispatch"),
        ("code.json", lambda d: d["code"][3].__setitem__(2, 1), "not an integer above the previous row's"),
        ("code.json", lambda d: d["code"][3].__setitem__(5, -4), "non-negative integers"),
        ("code.json", lambda d: d.update(sqtt_funcmap=[[1, 2, "x", "f"]]), "sqtt_funcmap row"),
        ("realtime.json", lambda d: d["SE0"].append([1]), "SE0 is not an SE<n> list"),
        ("other_simd_se0_0.json", lambda d: d["instructions"].append([1]), "do not match instructions_schema"),
    ],
)
def test_broken_run_files(folder, name, change, message):
    edit(folder / name, change)
    problems = viewer_schema_problems(folder)
    assert any(message in p for p in problems), problems


def test_unparsable_file(folder):
    (folder / "occupancy.json").write_text("{")
    assert viewer_schema_problems(folder)[0].startswith("occupancy.json: cannot be read as JSON")


def test_folder_without_any_data(tmp_path):
    (tmp_path / "filenames.json").write_text(json.dumps({"gfxip": 11, "gfxv": "navi"}))
    assert viewer_schema_problems(tmp_path) == ["Input did not produce usable viewer data."]


def test_snapshots_must_name_files_in_the_folder(folder):
    (folder / "source_0_a.cpp").write_text("int a;")
    (folder / "snapshots.json").write_text(json.dumps({"/": {"src": {"a.cpp": "source_0_a.cpp"}}}))
    assert viewer_schema_problems(folder) == []
    (folder / "source_0_a.cpp").unlink()
    assert viewer_schema_problems(folder) == ["snapshots.json: /src/a.cpp does not name a file in the folder"]

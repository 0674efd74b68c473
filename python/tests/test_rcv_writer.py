"""RcvOutputWriter fed with the golden records must reproduce the reference viewer folders."""

from __future__ import annotations

import json

import pytest
from conftest import (
    RCV_EXAMPLES,
    compare_viewer_output,
    load_golden,
    records_from_golden,
    reference_code_json,
    se_files,
)

from rocprof_trace_decoder.code_index import CodeIndex
from rocprof_trace_decoder.rcv import RcvOutputWriter, ShaderEngineFileWriter, write_code_json, write_stats_csv


@pytest.mark.parametrize("example", RCV_EXAMPLES)
def test_writer_reproduces_reference_from_golden_records(example, corpus, tmp_path):
    golden = load_golden(example)
    per_se = {entry["input"][0]: entry for entry in golden["per_se"]}
    run_dir = tmp_path / "ui_output_att1"
    run_dir.mkdir()
    index = CodeIndex.from_document(reference_code_json(corpus / example), load_counts=False)
    writer = RcvOutputWriter(run_dir, index, formats="json,csv")
    for se, path in se_files(corpus / example):
        writer.add_shader_records(se, records_from_golden(per_se[path.name]["callbacks"]))
    writer.finish()
    write_code_json(run_dir, index)
    write_stats_csv(tmp_path, index, run_dir.name)

    assert compare_viewer_output(tmp_path, corpus / "rcv_reference" / example) == []


def test_csv_only_writes_no_viewer_files_but_counts(corpus, tmp_path):
    example = RCV_EXAMPLES[0]
    golden = load_golden(example)
    index = CodeIndex.from_document(reference_code_json(corpus / example), load_counts=False)
    writer = RcvOutputWriter(tmp_path, index, formats="csv")
    for entry in golden["per_se"]:
        writer.add_shader_records(int(entry["input"][0][2:-4]), records_from_golden(entry["callbacks"]))
    writer.finish()
    assert list(tmp_path.iterdir()) == []
    executed = sum(
        len(wave["instructions"])
        for entry in golden["per_se"]
        for name, _, payload in entry["callbacks"]
        if name == "WAVE"
        for wave in payload
    )
    assert executed > 0
    assert sum(e.hitcount for e in index.entries.values()) == executed


def test_writer_json_layout_is_upstream_byte_format(corpus, tmp_path):
    """2-space indentation, no trailing newline: byte-identical to the reference writer."""
    example = RCV_EXAMPLES[0]
    golden = load_golden(example)
    index = CodeIndex.from_document(reference_code_json(corpus / example), load_counts=False)
    writer = RcvOutputWriter(tmp_path, index, formats="json")
    for se, path in se_files(corpus / example):
        entry = next(e for e in golden["per_se"] if e["input"][0] == path.name)
        writer.add_shader_records(se, records_from_golden(entry["callbacks"]))
    writer.finish()
    reference = corpus / "rcv_reference" / example / "ui_output_att1"
    for name in ("se0_sm0_sl0_wv0.json", "other_simd_se1_0.json", "realtime.json", "occupancy.json"):
        assert (tmp_path / name).read_bytes() == (reference / name).read_bytes(), name
    assert json.loads((tmp_path / "filenames.json").read_text())["gfxv"] == "navi"


@pytest.mark.parametrize("example", RCV_EXAMPLES)
def test_per_se_results_merged_like_parallel_workers(example, corpus, tmp_path):
    """What worker processes do: each SE written with its own fresh index, results and
    statistics merged by the parent afterwards; the folder must be the same."""
    golden = load_golden(example)
    per_se = {entry["input"][0]: entry for entry in golden["per_se"]}
    document = reference_code_json(corpus / example)
    run_dir = tmp_path / "ui_output_att1"
    run_dir.mkdir()
    index = CodeIndex.from_document(document, load_counts=False)
    writer = RcvOutputWriter(run_dir, index, formats="json,csv")
    for se, path in reversed(se_files(corpus / example)):  # workers finish in any order
        worker_index = CodeIndex.from_document(document, load_counts=False)
        result = ShaderEngineFileWriter(run_dir, worker_index, write_json=True).write(
            se, records_from_golden(per_se[path.name]["callbacks"])
        )
        assert len(worker_index.entries) == len(index.entries)
        counters = {pc: e.counters() for pc, e in worker_index.entries.items() if e.hitcount}
        per_se[path.name] = (result, counters)
    for se, path in se_files(corpus / example):  # ...but are merged in trace order
        result, counters = per_se[path.name]
        writer.add_result(result)
        index.add_counters(counters)
    writer.finish()
    write_code_json(run_dir, index)
    write_stats_csv(tmp_path, index, run_dir.name)

    assert compare_viewer_output(tmp_path, corpus / "rcv_reference" / example) == []


def test_fast_encoder_matches_json_dumps(corpus):
    from rocprof_trace_decoder.rcv import dumps_indented

    samples = [{}, [], {"a": [[], {}, [1, -2, 3], "é\n\"x", None, True, False, 1.5, 10**20]}, [[-1] * 3, ["s", 1]]]
    for sample in samples:
        assert dumps_indented(sample) == json.dumps(sample, indent=2)
    for path in sorted((corpus / "rcv_reference").glob("*/*/ui_output_att1/*.json"))[:20]:
        text = path.read_text()
        assert dumps_indented(json.loads(text)) == text, path


def test_source_snapshots(tmp_path):
    from rocprof_trace_decoder.rcv import copy_source_snapshots, write_source_snapshots

    sources = tmp_path / "src" / "proj"
    sources.mkdir(parents=True)
    (sources / "a.cpp").write_text("int a;")
    (sources / "b.h").write_text("int b;")
    out = tmp_path / "out"
    paths = [sources / "a.cpp", tmp_path / "missing.cpp", sources / "b.h", sources / "a.cpp"]
    assert write_source_snapshots(paths, out) == 2
    assert (out / "source_0_a.cpp").read_text() == "int a;"
    assert (out / "source_1_b.h").read_text() == "int b;"
    tree = json.loads((out / "snapshots.json").read_text())
    node = tree["/"]
    for part in sources.parts[1:]:
        node = node[part]
    assert node == {"a.cpp": "source_0_a.cpp", "b.h": "source_1_b.h"}
    assert write_source_snapshots([tmp_path / "missing.cpp"], tmp_path / "none") == 0
    assert not (tmp_path / "none" / "snapshots.json").exists()

    copy = tmp_path / "copy"
    copy.mkdir()
    copy_source_snapshots(out, copy)
    assert sorted(p.name for p in copy.iterdir()) == ["snapshots.json", "source_0_a.cpp", "source_1_b.h"]
    copy_source_snapshots(out, out)  # copying onto itself is a no-op

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
from rcv_schema import viewer_schema_problems

from rocprof_trace_decoder.code_index import CODE_HEADER, CodeIndex
from rocprof_trace_decoder.rcv import RcvOutputWriter, ShaderEngineFileWriter, write_code_json, write_stats_csv
from rocprof_trace_decoder.records import (
    Dispatch,
    Event,
    EventPayload,
    EventType,
    Occupancy,
    Pc,
    PerfEvent,
    ShaderData,
    TraceRecords,
)


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


def test_perf_counters_shaderdata_events_and_dispatches(tmp_path):
    """Record kinds the corpus never holds, written as PYTHON.md section 2 lays them out."""
    entry = Pc(0x100, 0)
    index = CodeIndex.from_document({
        "code": [["s_endpgm", 0, 1, "", 0, 0x100, 0, 0, 0, 0]], "header": CODE_HEADER,
        "kernels": [{"address": 0x100, "codeobj": 0, "name": "kern", "demangled": "kern"}],
    })  # fmt: skip
    load = Event(40, 50, EventType.CODE_OBJECT_LOAD, 0, 1, 0, EventPayload(4, 4, 4, 0), 8)
    barrier = Event(40, 45, EventType.CLUSTER_BARRIER, 1, 0, 2, EventPayload(0x500000003, 0x500000003, 3, 5), 16)
    records = TraceRecords(
        gfxip=12,
        perf_events=[PerfEvent(10, 1, 2, 3, 4, 5, 6)],
        shaderdata=[ShaderData(20, 0x1234, 1, 2, 3, 1, 0), ShaderData(30, 7, 1, 2, 3, 0, 0)],
        events=[load, barrier],
        dispatches=[Dispatch(80, 50, 1, 2, 16, 0x10, 8, 24, 512, 64, 2, 1, 0xBEEF, 32, entry)],
        occupancy=[Occupancy(Pc(0x200, 0), 5, 0, 1, 2, 3, 1, 0, 0, 0, 0, 0)],
    )
    writer = RcvOutputWriter(tmp_path, index, formats="json")
    writer.add_shader_records(2, records)
    writer.finish()
    write_code_json(tmp_path, index)

    def load_json(name):
        return json.loads((tmp_path / name).read_text())

    assert load_json("se2_perfcounter.json") == {"data": [[10, 1, 2, 3, 4, 5, 6]]}
    assert load_json("shaderdata_2_0.json") == {
        "type": "shaderdata", "begin_time": 20, "end_time": 30,
        "records_schema": ["time", "value", "cu", "simd", "wave_id", "flags"], "records_count": 2,
        "records": [[20, 0x1234, 1, 2, 3, 1], [30, 7, 1, 2, 3, 0]],
    }  # fmt: skip
    filenames = load_json("filenames.json")
    assert (filenames["gfxip"], filenames["gfxv"]) == (12, "navi")
    assert filenames["shaderdata_filenames"] == {"2": [["shaderdata_2_0.json", 20, 30]]}

    occupancy = load_json("occupancy.json")
    # Kernel ids in first use: the occupancy launch PC, then the dispatch entry point.
    assert occupancy["2"] == [[5, 1, 2, 3, 1, 1, 0, 0, 0, 0, 0]]
    assert occupancy["dispatches"] == {"0": "0 / 0x0", "1": "0 / 0x200", "2": "kern"}
    assert occupancy["events"]["2"] == [
        {"kind": "event", "time": 45, "type": 14, "me_id": 1, "pipe_id": 0, "flags": 2, "payload": 0x500000003,
         "byte_offset": 16, "cluster_id": 3, "barrier_id": 5},
        {"kind": "dispatch", "time": 50, "me_id": 1, "pipe_id": 2, "kernel_id": 2, "kernel_name": "kern",
         "entry_point": {"address": 0x100, "code_object_id": 0}, "user_sgprs": 16, "vgprs": 8, "sgprs": 24,
         "lds_size": 512, "thread_dim_x": 64, "thread_dim_y": 2, "thread_dim_z": 1, "dispatch_pkt_addr": 0xBEEF,
         "byte_offset": 32, "flags": 0x10},
        {"kind": "event", "time": 50, "type": 7, "me_id": 0, "pipe_id": 1, "flags": 0, "payload": 4,
         "byte_offset": 8, "code_object_id": 4},
    ]  # fmt: skip
    assert viewer_schema_problems(tmp_path) == []

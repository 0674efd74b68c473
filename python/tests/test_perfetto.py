"""`--perfetto FILE`: the trace is read back with the perfetto package's protos and checked against
the records the decoder gives for the same traces (one example per architecture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import PYTHON_DIR, RCV_EXAMPLES, prepare_rcv_input

from rocprof_trace_decoder import CodeIndex, Decoder
from rocprof_trace_decoder.perfetto_export import (
    DEFAULT_REALTIME_FREQUENCY_HZ,
    TraceSource,
    write_perfetto_trace,
)
from rocprof_trace_decoder.records import InstCategory, Instruction, Occupancy, Pc, Realtime, TraceRecords, Wave

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2
except ImportError:
    if os.environ.get("RTD_ALLOW_MISSING") != "1":
        raise  # pip install 'python/[perfetto]' (RTD_ALLOW_MISSING=1 skips these tests instead)
    pytest.skip("the perfetto package is not installed", allow_module_level=True)



class ReadBack:
    """Slices, counters and tracks of a trace file, with interned names resolved."""

    def __init__(self, path: Path):
        trace = perfetto_trace_pb2.Trace.FromString(path.read_bytes())
        self.processes: dict[int, str] = {}  # pid -> name
        self.track_pid: dict[int, int] = {}
        self.track_name: dict[int, str] = {}
        self.counter_tracks: set[int] = set()
        self.slices: list[dict] = []  # {track, begin, end, name, category, args}
        self.counters: list[tuple[int, int, int]] = []  # (track, ts, value)
        names, categories, annotation_names = {}, {}, {}
        open_slices: dict[int, list[dict]] = defaultdict(list)
        pending_parents: dict[int, int] = {}
        for packet in trace.packet:
            interned = packet.interned_data
            names.update({e.iid: e.name for e in interned.event_names})
            categories.update({e.iid: e.name for e in interned.event_categories})
            annotation_names.update({e.iid: e.name for e in interned.debug_annotation_names})
            if packet.HasField("track_descriptor"):
                d = packet.track_descriptor
                if d.HasField("process"):
                    self.processes[d.process.pid] = d.process.process_name
                    self.track_pid[d.uuid] = d.process.pid
                elif d.HasField("thread"):
                    self.track_pid[d.uuid] = d.thread.pid
                    self.track_name[d.uuid] = d.thread.thread_name
                else:
                    pending_parents[d.uuid] = d.parent_uuid
                    self.track_name[d.uuid] = d.name
                if d.HasField("counter"):
                    self.counter_tracks.add(d.uuid)
            if packet.HasField("track_event"):
                event = packet.track_event
                if event.type == event.TYPE_SLICE_BEGIN:
                    args = {}
                    for a in event.debug_annotations:
                        kind = a.WhichOneof("value")
                        args[annotation_names[a.name_iid]] = getattr(a, kind)
                    open_slices[event.track_uuid].append({
                        "track": event.track_uuid, "begin": packet.timestamp, "name": names[event.name_iid],
                        "category": categories[event.category_iids[0]], "args": args})  # fmt: skip
                elif event.type == event.TYPE_SLICE_END:
                    opened = open_slices[event.track_uuid].pop()
                    opened["end"] = packet.timestamp
                    self.slices.append(opened)
                elif event.type == event.TYPE_COUNTER:
                    self.counters.append((event.track_uuid, packet.timestamp, event.counter_value))
        assert not any(open_slices.values()), "slices left open"
        for uuid, parent in pending_parents.items():
            self.track_pid[uuid] = self.track_pid[parent]

    def of_category(self, *categories: str) -> list[dict]:
        return [s for s in self.slices if s["category"] in categories]


def interpolate(samples: list[Realtime], cycles: int) -> float:
    """ns at a shader clock, from the two samples around it (the outer two beyond the ends)."""
    points = []
    for s in sorted(samples, key=lambda s: s.shader_clock):
        ns = s.realtime_clock * 1e9 / DEFAULT_REALTIME_FREQUENCY_HZ
        if not points or (s.shader_clock > points[-1][0] and ns > points[-1][1]):
            points.append((s.shader_clock, ns))
    inner = [i for i in range(len(points) - 1) if points[i][0] <= cycles]
    i = inner[-1] if inner else 0
    (x0, y0), (x1, y1) = points[i], points[i + 1]
    return y0 + (cycles - x0) * (y1 - y0) / (x1 - x0)


def decode(inputs: Path, lib: str) -> dict[int, TraceRecords]:
    index = CodeIndex.from_code_json(inputs / "code.json", load_counts=False)
    with Decoder(lib) as decoder:
        return {int(p.stem.split("_")[3]): decoder.parse_file(p, isa=index) for p in sorted(inputs.glob("*.att"))}


@pytest.mark.parametrize("example", RCV_EXAMPLES)  # gfx1100, gfx1200 and two gfx950 examples
def test_perfetto_trace_matches_the_decoded_records(example, corpus, decoder_lib, tmp_path):
    inputs = prepare_rcv_input(example, tmp_path / "input")
    out = tmp_path / "trace.pftrace"
    env = dict(os.environ, ROCPROF_TRACE_DECODER_LIB=decoder_lib)
    result = subprocess.run([sys.executable, str(PYTHON_DIR / "att_tool.py"), "--formats", "json", "-j", "2",
                             "--perfetto", str(out), str(inputs)], capture_output=True, text=True, env=env,
                            timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == str(out)
    decoded = decode(inputs, decoder_lib)
    trace = ReadBack(out)

    # A process per shader engine, named after it.
    assert len(trace.processes) == len(decoded)
    pid_of_se = {}
    for pid, name in trace.processes.items():
        se = int(name.split("shader engine ")[1].split()[0])
        pid_of_se[se] = pid
    assert sorted(pid_of_se) == sorted(decoded)

    # Slices of a track never overlap (Perfetto needs them to nest).
    by_track = defaultdict(list)
    for s in trace.slices:
        by_track[s["track"]].append((s["begin"], s["end"]))
    for intervals in by_track.values():
        intervals.sort()
        assert all(b[0] >= a[1] for a, b in zip(intervals, intervals[1:]))

    kernel = kernel_name(corpus / example)
    index = CodeIndex.from_code_json(inputs / "code.json", load_counts=False)
    for se, records in decoded.items():
        pid = pid_of_se[se]
        waves = [s for s in trace.of_category("wave") if trace.track_pid[s["track"]] == pid]
        insts = [s for s in trace.slices if s["category"] != "wave" and trace.track_pid[s["track"]] == pid]
        assert len(waves) == len(records.waves)
        assert Counter(s["args"]["instructions"] for s in waves) == Counter(len(w.instructions) for w in records.waves)
        assert len(insts) == sum(len(w.instructions) for w in records.waves)
        assert Counter(s["category"] for s in insts) == Counter(
            InstCategory(i.category).name for w in records.waves for i in w.instructions)
        assert Counter((s["args"]["pc"], s["args"]["code_object"], s["args"]["stall"], s["args"]["duration"])
                       for s in insts) == Counter((i.pc.address, i.pc.code_object_id, i.stall, i.duration)
                                                  for w in records.waves for i in w.instructions)  # fmt: skip
        # Instruction slices are named with their ISA text, waves with their kernel.
        assert all(s["name"] == index.entries[Pc(s["args"]["pc"], s["args"]["code_object"])].inst for s in insts)
        # The kernel's name where code.json lists its entry PC; rocprofv3's code.json of the aiter captures
        # does not list the PC the dispatches launched at, so those waves show code object / address.
        launched = {o.pc for o in records.occupancy if o.start}
        known = {Pc(k["address"], k["codeobj"]) for k in index.document["kernels"]}
        expected = {kernel if pc in known else f"{pc.code_object_id} / 0x{pc.address:x}" for pc in launched}
        assert {s["name"] for s in waves} <= expected

        counters = [c for c in trace.counters if trace.track_pid[c[0]] == pid]
        engine = [c for c in counters if trace.track_name[c[0]] == "waves resident"]
        per_cu = [c for c in counters if trace.track_name[c[0]] != "waves resident"]
        assert len(engine) == len(per_cu) == len(records.occupancy)
        running, resident = 0, []
        for record in sorted(records.occupancy, key=lambda o: o.time):
            running += 1 if record.start else -1
            resident.append(running)
        lift = -min([0, *resident])
        assert sorted(v for _, _, v in engine) == sorted(v + lift for v in resident)

        in_cycles = "shader clock cycles" in trace.processes[pid]
        has_clock = any(len(r.realtime) >= 2 for r in decoded.values())
        assert in_cycles == (not has_clock)
        samples = records.realtime if len(records.realtime) >= 2 else [r for d in decoded.values() for r in d.realtime]
        for s, wave in zip(sorted(waves, key=lambda s: s["begin"]), sorted(records.waves, key=lambda w: w.begin_time)):
            expected = wave.begin_time if in_cycles else interpolate(samples, wave.begin_time)
            assert abs(s["begin"] - expected) <= 1


def kernel_name(example_dir: Path) -> str:
    return json.loads((example_dir / "meta.json").read_text())["code_objects"][0]["name"]


def test_overlapping_instructions_and_waves_use_more_tracks_and_source_lines_become_arguments(tmp_path):
    pc = Pc(0x1000, 1)
    index = CodeIndex.from_document({"code": [["v_add_f32 v0, v1, v2", 0, 1, "k.cpp:7", 1, 0x1000, 0, 0, 0, 0]],
                                     "kernels": [{"address": 0x1000, "codeobj": 1, "name": "k"}]})  # fmt: skip
    instructions = [Instruction(InstCategory.VALU, 2, 50, 100 + 10 * n, pc) for n in range(3)]  # three in flight
    records = TraceRecords(
        waves=[Wave(0, 0, 0, 0, 0, 0, 0, 0, 64, 90, 400, [], instructions),
               Wave(0, 0, 0, 0, 0, 0, 0, 0, 64, 300, 500, [], [])],  # fmt: skip
        occupancy=[Occupancy(pc, 80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0), Occupancy(pc, 600, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)],
        realtime=[Realtime(0, 1000, 0), Realtime(1000, 1500, 0)],
    )
    path = write_perfetto_trace(tmp_path / "t.pftrace", [TraceSource(1, 0, records)], index)
    trace = ReadBack(path)
    insts = trace.of_category("VALU")
    assert len({s["track"] for s in insts}) == 3
    assert [s["args"]["source"] for s in insts] == ["k.cpp:7"] * 3
    assert {s["name"] for s in insts} == {"v_add_f32 v0, v1, v2"}
    waves = sorted(trace.of_category("wave"), key=lambda s: s["begin"])
    assert [s["name"] for s in waves] == ["k", "k"] and waves[0]["track"] != waves[1]["track"]
    # 1000 shader clocks per 500 realtime ticks of 10 ns: 5 ns per cycle, from 10 us.
    assert waves[0]["begin"] == 10_000 + 90 * 5 and waves[0]["end"] == 10_000 + 400 * 5
    assert sorted(v for _, _, v in trace.counters) == [0, 0, 1, 1]


def test_parallel_decoding_gives_the_same_files(corpus, decoder_lib, tmp_path):
    written = {}
    for jobs in ("1", "2"):
        inputs = prepare_rcv_input(RCV_EXAMPLES[0], tmp_path / f"input{jobs}")
        out = tmp_path / f"jobs{jobs}.pftrace"
        env = dict(os.environ, ROCPROF_TRACE_DECODER_LIB=decoder_lib)
        result = subprocess.run([sys.executable, str(PYTHON_DIR / "att_tool.py"), "-j", jobs, "--base-name", "att",
                                 "--perfetto", str(out), str(inputs)], capture_output=True, text=True, env=env,
                                timeout=600)  # fmt: skip
        assert result.returncode == 0, result.stderr
        run_dir = inputs / "ui_output_att1"
        written[jobs] = {p.name: p.read_bytes() for p in run_dir.iterdir()}, out.read_bytes()
    assert written["1"] == written["2"]

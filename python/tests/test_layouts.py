"""The binding's record layouts agree with the C ABI (spec layout.json)."""

from __future__ import annotations

import ctypes
import json

import pytest
from conftest import CORPUS, missing

from rocprof_trace_decoder.bindings import _store_batch
from rocprof_trace_decoder.records import RecordType, TraceRecords

# The spec beside the corpus (RTD_CORPUS, default ../shared/corpus).
LAYOUT = CORPUS.parent / "spec" / "layout.json"
PREFIX = "rocprofiler_thread_trace_decoder_"

# record type -> (C struct, TraceRecords list, {C field: attribute path on the Python record})
CASES = {
    RecordType.PERFEVENT: ("perfevent_t", "perf_events",
                           {"time": "time", "events0": "events0", "events3": "events3", "CU": "cu", "bank": "bank"}),
    RecordType.REALTIME: ("realtime_t", "realtime",
                          {"shader_clock": "shader_clock", "realtime_clock": "realtime_clock", "reserved": "reserved"}),
    RecordType.SHADERDATA: ("shaderdata_t", "shaderdata",
                            {"time": "time", "value": "value", "wave_id": "wave_id", "flags": "flags",
                             "reserved": "reserved"}),
    RecordType.INST_OTHER_SIMD: ("inst_other_simd_t", "other_simd",
                                 {"size": "size", "time": "time", "cycles": "cycles", "wgp": "wgp",
                                  "category": "category"}),
    RecordType.EVENT: ("event_t", "events",
                       {"size": "size", "time": "time", "type": "type", "me_id": "me_id", "pipe_id": "pipe_id",
                        "flags": "flags", "payload": "payload.raw", "byte_offset": "byte_offset"}),
    RecordType.DISPATCH: ("dispatch_t", "dispatches",
                          {"time": "time", "me_id": "me_id", "pipe_id": "pipe_id", "user_sgprs": "user_sgprs",
                           "flags": "flags", "vgprs": "vgprs", "sgprs": "sgprs", "lds_size": "lds_size",
                           "thread_dim_z": "thread_dim_z", "dispatch_pkt_addr": "dispatch_pkt_addr",
                           "byte_offset": "byte_offset", "entry_point": "entry_point.address"}),
    RecordType.OCCUPANCY: ("occupancy_t", "occupancy",
                           {"pc": "pc.address", "time": "time", "reserved": "reserved", "cu": "cu", "simd": "simd",
                            "wave_id": "wave_id"}),
}  # fmt: skip


@pytest.fixture(scope="module")
def layout():
    if not LAYOUT.is_file():
        missing(f"the ABI layout {LAYOUT}")
    return json.loads(LAYOUT.read_text())


def attribute(record, path):
    for name in path.split("."):
        record = getattr(record, name)
    return record


@pytest.mark.parametrize("record_type", list(CASES))
def test_fields_are_read_from_their_c_offsets(record_type, layout):
    struct_name, list_name, fields = CASES[record_type]
    spec = layout[PREFIX + struct_name]
    count = 2
    buffer = (ctypes.c_uint8 * (spec["size"] * count))()
    expected = {}
    for index in range(count):
        for number, (field, target) in enumerate(fields.items()):
            offset, size = spec["fields"][field]
            value = (index * 16 + number + 1) % (1 << min(8 * size, 7))  # small, positive, distinct
            ctypes.memmove(ctypes.addressof(buffer) + index * spec["size"] + offset, value.to_bytes(size, "little"), size)
            expected[(index, target)] = value
    records = TraceRecords()
    _store_batch(records, record_type, ctypes.addressof(buffer), count)
    batch = getattr(records, list_name)
    assert len(batch) == count
    for (index, target), value in expected.items():
        assert attribute(batch[index], target) == value, (struct_name, target)


def test_occupancy_bit_fields(layout):
    bits = layout[PREFIX + "occupancy_t"]["bitfields"]
    values = {"start": 1, "me_id": 5, "pipe_id": 9, "is_ext": 1, "workgroup_id": 100, "cluster_id": 17}
    word = 0
    for name, value in values.items():
        position, width = bits[name]
        assert value < (1 << width)
        word |= value << (position - 28 * 8)
    buffer = (ctypes.c_uint8 * 32)()
    ctypes.memmove(ctypes.addressof(buffer) + 28, word.to_bytes(4, "little"), 4)
    records = TraceRecords()
    _store_batch(records, RecordType.OCCUPANCY, ctypes.addressof(buffer), 1)
    assert {name: getattr(records.occupancy[0], name) for name in values} == values


def test_record_sizes(layout):
    from rocprof_trace_decoder import bindings

    sizes = {"perfevent_t": bindings._PERFEVENT, "occupancy_t": bindings._OCCUPANCY, "inst_t": bindings._INST,
             "wave_t": bindings._WAVE, "wave_state_t": bindings._WAVE_STATE, "realtime_t": bindings._REALTIME,
             "shaderdata_t": bindings._SHADERDATA, "marker_t": bindings._MARKER, "event_t": bindings._EVENT,
             "inst_other_simd_t": bindings._OTHER_SIMD, "dispatch_t": bindings._DISPATCH}  # fmt: skip
    for name, packed in sizes.items():
        assert packed.size == layout[PREFIX + name]["size"], name


def test_marker_strings_and_enums(layout):
    spec = layout[PREFIX + "marker_t"]["fields"]
    buffer = (ctypes.c_uint8 * 104)()
    base = ctypes.addressof(buffer)
    name = ctypes.create_string_buffer("fünf".encode())

    def put(field, value):
        offset, size = spec[field]
        ctypes.memmove(base + offset, value.to_bytes(size, "little", signed=value < 0), size)

    put("size", 104)
    put("code_object_id", 4)
    put("name", ctypes.addressof(name))
    put("marker_id", 7)
    put("record_kind", 1)
    put("marker_kind", 2)
    put("marker_flags", 6)
    put("payload_index", 3)
    put("delay", -5)
    ctypes.memmove(base + spec["shaderdata"][0] + 8, (0xABC).to_bytes(8, "little"), 8)
    records = TraceRecords()
    _store_batch(records, RecordType.MARKER, base, 1)
    marker = records.markers[0]
    assert (marker.name, marker.source_location, marker.code_object_id, marker.marker_id) == ("fünf", None, 4, 7)
    assert (marker.record_kind.name, marker.marker_kind.name, int(marker.marker_flags)) == ("PAYLOAD", "USER_SCOPE", 6)
    assert (marker.payload_index, marker.delay, marker.shaderdata.value) == (3, -5, 0xABC)

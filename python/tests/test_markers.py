"""Packed marker headers: value normalisation and timestamp correction (numbers worked by hand)."""

from __future__ import annotations

import conftest  # noqa: F401  (puts the package on sys.path)
import pytest

from rocprof_trace_decoder.markers import correct_marker_timestamps, has_packed_marker_layout
from rocprof_trace_decoder.records import Occupancy, Pc, ShaderData, TraceRecords

BITS, SHIFT, CODE_OBJECT, FUNCTION_ID, WITH_PAYLOAD_ID = 12, 4, 10, 8, 9
DOCUMENT = {
    "sqtt_funcmap_layout": [[CODE_OBJECT, BITS, SHIFT]],
    "sqtt_funcmap": [[CODE_OBJECT, FUNCTION_ID, "F", "f", "", 0], [CODE_OBJECT, WITH_PAYLOAD_ID, "U", "s", "", 0],
                     [CODE_OBJECT, 0, "K", "kern", "", 0]],  # fmt: skip
    "sqtt_funcmap_payloads": [[CODE_OBJECT, WITH_PAYLOAD_ID, 1]],
}


def header(time, sample, marker_id=FUNCTION_ID, flags=0b10, simd=0, record_flags=0):
    raw = ((sample >> SHIFT) << (32 - BITS)) | (marker_id << 2) | flags
    return ShaderData(time, raw, 0, simd, 0, record_flags, 0)


def records(*samples):
    launches = [Occupancy(Pc(0x1800, CODE_OBJECT), 0, 0, 0, simd, 0, 1, 0, 0, 0, 0, 0) for simd in (0, 1)]
    return TraceRecords(occupancy=launches, shaderdata=list(samples))


def corrected(*samples):
    trace = records(*samples)
    correct_marker_timestamps([(0, trace)], DOCUMENT)
    return trace.shaderdata


@pytest.mark.parametrize(
    "first, second, expected_times",
    [
        ((0x1010, 0x1000), (0x1080, 0x1010), [0x1010, 0x102F]),
        ((0x1040, 0x1000), (0x1080, 0x1070), [0x101F, 0x1080]),
        ((0x101D0, 0x0), (0x10DFC, 0x1000), [0xFE0B, 0x10DFC]),
    ],
)
def test_headers_move_by_their_extra_delay(first, second, expected_times):
    result = corrected(header(*first), header(*second))
    assert [s.time for s in result] == expected_times
    assert [s.value for s in result] == [(FUNCTION_ID << 2) | 0b10] * 2


def test_domains_are_per_simd_and_equal_samples_are_left_alone():
    result = corrected(header(0x1040, 0x1000, simd=1), header(0x1080, 0x1070, simd=1),
                       header(0x1050, 0x1000), header(0x1090, 0x1000))  # fmt: skip
    assert sorted((s.simd, s.time) for s in result) == [(0, 0x1050), (0, 0x1090), (1, 0x101F), (1, 0x1080)]


def test_immediate_values_and_unknown_ids_are_not_headers():
    immediate = header(0x1040, 0x1000, record_flags=1)
    unknown = header(0x1050, 0x1000, marker_id=33)
    raw_immediate, raw_unknown = immediate.value, unknown.value
    timed = header(0x1060, 0x1000)
    result = corrected(immediate, unknown, timed, header(0x1080, 0x1070))
    assert (immediate.time, immediate.value) == (0x1040, raw_immediate)
    assert (unknown.time, unknown.value) == (0x1050, raw_unknown)
    assert [s.time for s in result] == [0x101F, 0x1040, 0x1050, 0x1080] and result[0] is timed


def test_payload_moves_with_its_header_and_stays_behind_it():
    timed = [header(0x1040, 0x1000), header(0x1080, 0x1070)]
    with_payload = header(0x1060, 0x1000, marker_id=WITH_PAYLOAD_ID)
    payload = ShaderData(0x1061, 0xDEADBEEF, 0, 0, 0, 0, 0)
    result = corrected(timed[0], with_payload, payload, timed[1])
    assert with_payload.value == (WITH_PAYLOAD_ID << 2) | 0b10  # normalised, but not timed
    assert payload.value == 0xDEADBEEF and payload.time == 0x1061
    assert [s.time for s in result] == [0x101F, 0x1060, 0x1061, 0x1080]


def test_bare_exit_is_a_header():
    bare_exit = header(0x1080, 0x1070, marker_id=0, flags=0b01)
    corrected(header(0x1040, 0x1000), bare_exit)
    assert bare_exit.value == 0b01


def test_layout_validation():
    assert has_packed_marker_layout(DOCUMENT)
    for layout in ([[10, 0, 4]], [[10, 30, 0]], [[10, 20, 13]], [[-1, 12, 4]], []):
        assert not has_packed_marker_layout({"sqtt_funcmap_layout": layout}), layout

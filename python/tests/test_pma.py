"""PMA decoding through the built library, on streams made by a small encoder written from the
documented layout (NV_PMA.md §2-§4). Build first: ``cargo build --release``; the library is taken
from ROCPROF_TRACE_DECODER_LIB, by default target/release/librocprof_trace_decoder.so."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault(
    "ROCPROF_TRACE_DECODER_LIB", str(REPO / "target" / "release" / "librocprof_trace_decoder.so")
)
sys.path.insert(0, str(REPO / "python"))

from rocprof_trace_decoder import pma  # noqa: E402
from rocprof_trace_decoder.pma import StallReason  # noqa: E402

AMPERE, BLACKWELL = 0x800, 0xA04


# --- encoder -------------------------------------------------------------------------------------


def encode_8(pc_raw: int, stall_key: int, wave_id: int, active: bool) -> bytes:
    """pc 0-44, stall key 45-49, wave 50-55, active 62."""
    word = pc_raw | stall_key << 45 | wave_id << 50 | int(active) << 62
    return word.to_bytes(8, "little")


def encode_9(pc_raw: int, stall_key: int, wave_id: int, active: bool) -> bytes:
    """stall key 0-5, wave high bits 6-7, pc 8-60, active 67, wave low bits 68-71."""
    word = stall_key | (wave_id >> 4) << 6 | pc_raw << 8 | int(active) << 67 | (wave_id & 0xF) << 68
    return word.to_bytes(9, "little")


def packet(tpc_id: int, payload: bytes, dropped: bool = False, num_bytes: int | None = None) -> bytes:
    """Payload bytes 0-3, header (num_bytes 0-4, TPC low 8-15, TPC high 25-27, dropped 28), the
    rest of the payload; unused payload bytes are 0xEE."""
    num_bytes = len(payload) if num_bytes is None else num_bytes
    header = num_bytes | (tpc_id & 0xFF) << 8 | (tpc_id >> 8) << 25 | int(dropped) << 28
    body = payload.ljust(28, b"\xee")
    return body[:4] + header.to_bytes(4, "little") + body[4:]


def packetize(tpc_id: int, data: bytes, sizes: list[int]) -> list[bytes]:
    packets, offset, index = [], 0, 0
    while offset < len(data):
        size = sizes[index % len(sizes)]
        packets.append(packet(tpc_id, data[offset : offset + size]))
        offset += size
        index += 1
    return packets


def interleave(streams: list[list[bytes]]) -> bytes:
    out = bytearray()
    for index in range(max(map(len, streams))):
        for stream in streams:
            if index < len(stream):
                out += stream[index]
    return bytes(out)


def random_fields(rng: random.Random, nine_byte: bool) -> tuple[int, int, int, bool]:
    pc_bits, key_bits = (53, 6) if nine_byte else (45, 5)
    return (rng.getrandbits(pc_bits), rng.getrandbits(key_bits), rng.getrandbits(6), rng.random() < 0.5)


def fields(sample: pma.Sample) -> tuple[int, int, int, bool]:
    return (sample.pc_offset >> 4, sample.stall_key, sample.wave_id, sample.active)


DOCUMENTED_8 = {1: 9, 15: 9, 2: 7, 3: 6, 6: 2, 11: 2, 7: 3, 10: 3, 9: 4, 12: 8, 17: 11, 20: 11, 18: 1}
DOCUMENTED_9 = {
    0x01: 9, 0x0E: 9, 0x02: 6, 0x05: 2, 0x0A: 2, 0x06: 3, 0x09: 3,
    0x08: 4, 0x0B: 8, 0x0F: 8, 0x10: 11, 0x13: 11, 0x11: 1,
}  # fmt: skip


# --- tests ---------------------------------------------------------------------------------------


def test_documented_vectors():
    eight = bytes.fromhex(
        "341200000c2300020020154034120000000000000000000000000000000000000020154004230002"
        "000000000000000000000000000000000000000000000000"
    )
    samples = list(pma.decode(eight, AMPERE))
    assert [(s.pc_offset, s.stall_reason, s.wave_id, s.active, s.tpc_id) for s in samples] == [
        (0x12340, StallReason.MEMORY_DEPENDENCY, 5, True, 0x123)
    ] * 2
    nine = bytes.fromhex("8b34120009050000000000007800000000000000000000000000000000000000")
    (sample,) = pma.decode(nine, BLACKWELL)
    assert (sample.pc_offset, sample.stall_key, sample.stall_reason) == (0x12340, 0x0B, StallReason.PIPE_BUSY)
    assert (sample.wave_id, sample.active, sample.tpc_id) == (39, True, 5)


@pytest.mark.parametrize("sm_version", [AMPERE, BLACKWELL])
@pytest.mark.parametrize("sizes", [[28], [1], [5, 13, 28, 2]])
def test_samples_split_across_packets(sm_version, sizes):
    nine_byte = sm_version == BLACKWELL
    encode = encode_9 if nine_byte else encode_8
    rng = random.Random(sum(sizes))
    expected = [random_fields(rng, nine_byte) for _ in range(300)]
    data = b"".join(packetize(0x2A, b"".join(encode(*f) for f in expected), sizes))
    assert [fields(s) for s in pma.decode(data, sm_version)] == expected


@pytest.mark.parametrize("sm_version", [AMPERE, BLACKWELL])
def test_interleaved_tpcs_and_arbitrary_chunks(sm_version):
    nine_byte = sm_version == BLACKWELL
    encode = encode_9 if nine_byte else encode_8
    rng = random.Random(3)
    tpc_ids = [0x000, 0x123, 0x7FF, 0x400]
    per_tpc = {tpc: [random_fields(rng, nine_byte) for _ in range(50)] for tpc in tpc_ids}
    data = interleave(
        [
            packetize(tpc, b"".join(encode(*f) for f in per_tpc[tpc]), [3 + 7 * index, 28, 11])
            for index, tpc in enumerate(tpc_ids)
        ]
    )
    whole = list(pma.decode(data, sm_version))
    for tpc in tpc_ids:
        mine = [s for s in whole if s.tpc_id == tpc]
        assert [fields(s) for s in mine] == per_tpc[tpc]
        assert {(s.gpc, s.tpc, s.sm) for s in mine} == {(tpc >> 5, (tpc >> 1) & 0xF, tpc & 1)}

    with pma.Decoder(sm_version) as decoder:
        chunked, offset = [], 0
        while offset < len(data):
            step = rng.randrange(0, 70)
            chunked += decoder.feed(data[offset : offset + step])
            offset += step
    assert chunked == whole


def test_dropped_flag_discards_the_partial_record_of_its_tpc():
    first, lost, after, other = (0x111, 3, 1, True), (0x222, 7, 2, True), (0x333, 12, 3, False), (0x444, 18, 4, True)
    lost_bytes, other_bytes = encode_8(*lost), encode_8(*other)
    data = (
        packet(1, encode_8(*first) + lost_bytes[:5])
        + packet(2, other_bytes[:3])
        + packet(1, encode_8(*after), dropped=True)
        + packet(2, other_bytes[3:])
    )
    with pma.Decoder(AMPERE) as decoder:
        samples = decoder.feed(data)
        stats = decoder.stats()
    assert [(s.tpc_id, fields(s)) for s in samples] == [(1, first), (1, after), (2, other)]
    assert (stats.dropped_packets, stats.discarded_bytes, stats.samples) == (1, 5, 3)


@pytest.mark.parametrize("sm_version", [AMPERE, BLACKWELL])
def test_every_stall_key(sm_version):
    nine_byte = sm_version == BLACKWELL
    encode, documented, keys = (encode_9, DOCUMENTED_9, 64) if nine_byte else (encode_8, DOCUMENTED_8, 32)
    data = b"".join(packetize(9, b"".join(encode(key, key, 1, True) for key in range(keys)), [28]))
    samples = list(pma.decode(data, sm_version))
    assert [s.stall_key for s in samples] == list(range(keys))
    assert [int(s.stall_reason) for s in samples] == [documented.get(key, 11) for key in range(keys)]


def test_sample_size_thresholds():
    sizes = {sm: pma.sample_size(sm) for sm in (0x800, 0x806, 0x890, 0x900, 0xA00, 0xA04, 0xC00)}
    assert sizes == {0x800: 8, 0x806: 8, 0x890: 8, 0x900: 8, 0xA00: 8, 0xA04: 9, 0xC00: 9}
    with pytest.raises(pma.PmaError) as error:
        pma.Decoder(0x705)
    assert error.value.status == 5


def test_malformed_packets_warn_and_the_rest_decodes():
    good = (0x10, 1, 1, True)
    data = packet(6, b"\xaa" * 28, num_bytes=30) + packet(6, encode_8(*good))
    with pytest.warns(RuntimeWarning, match="1 malformed"):
        samples = list(pma.decode(data, AMPERE))
    assert [fields(s) for s in samples] == [good]


def test_stall_reason_names_match_the_library():
    assert [pma.stall_reason_name(reason) for reason in StallReason] == [r.name for r in StallReason]
    assert pma.stall_reason_name(len(StallReason)) == "UNKNOWN"


def test_decode_reads_files_in_chunks(tmp_path, monkeypatch):
    rng = random.Random(11)
    expected = [random_fields(rng, False) for _ in range(100)]
    path = tmp_path / "stream.pma"
    path.write_bytes(b"".join(packetize(4, b"".join(encode_8(*f) for f in expected), [28, 9])))
    monkeypatch.setattr(pma, "CHUNK_SIZE", 50)
    with path.open("rb") as source:
        assert [fields(s) for s in pma.decode(source, AMPERE)] == expected


def test_command_line(tmp_path, capsys):
    samples = [(0x100, 0x08, 3, True), (0x100, 0x08, 4, True), (0x102, 0x11, 5, False)]
    path = tmp_path / "stream.pma"
    path.write_bytes(b"".join(packetize(0x21, b"".join(encode_9(*f) for f in samples), [28])))

    assert pma.main([str(path), "--sm", "0xa04", "--color", "never"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("pc=0x001000 MEMORY_DEPENDENCY")
    assert "wave= 3 gpc=1 tpc=0 sm=1" in lines[0]
    assert "\x1b[" not in out
    assert "base pc 0x1000, 3 samples" in out
    row_0 = next(line for line in lines if line.strip().startswith("+0x0 "))
    row_20 = next(line for line in lines if line.strip().startswith("+0x20 "))
    # Columns: total, then NONE and MEMORY_DEPENDENCY in CUPTI order.
    assert lines[lines.index(row_0) - 1].split()[-2:] == ["NONE", "MEMORY_DEPENDENCY"]
    assert row_0.split()[1:] == ["2", ".", "2"]
    assert row_20.split()[1:] == ["1", "1", "."]

    assert pma.main([str(path), "--sm", "0xa04", "--color", "always", "--table-only"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[31m" in out and "pc=0x" not in out


def test_module_entry_point(tmp_path):
    path = tmp_path / "stream.pma"
    path.write_bytes(packet(1, encode_8(0x40, 9, 2, True)))
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    result = subprocess.run(
        [sys.executable, "-m", "rocprof_trace_decoder.pma", str(path), "--sm", "0x800"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert result.stdout.startswith("pc=0x000400 MEMORY_DEPENDENCY")
    assert "\x1b[" not in result.stdout

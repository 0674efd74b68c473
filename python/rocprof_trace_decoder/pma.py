"""NVIDIA PMA PC-sampling decoding through librocprof-trace-decoder (pure ctypes).

The PMA stream of the NVIDIA PC sampler is a sequence of 32-byte packets carrying per-TPC byte
streams of sample records (8 bytes up to Hopper, 9 bytes on Blackwell). ``decode(data,
sm_version)`` yields one ``Sample`` per record; ``python3 -m rocprof_trace_decoder.pma FILE --sm
N`` prints the samples and a per-PC stall table.

An extra of this package, not an upstream module. The library is found as for the ATT
``Decoder`` (``_library``: a ``lib_path`` argument, ``ROCPROF_TRACE_DECODER_LIB``, the bundled
copy, the ROCm directories, the platform loader), so both decode with the same file.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import enum
import os
import struct
import sys
import warnings
from collections import Counter
from typing import BinaryIO, Iterable, Iterator, NamedTuple, Union

from ._library import load as load_library

__all__ = [
    "Decoder",
    "PmaError",
    "Sample",
    "Stats",
    "StallReason",
    "aggregate",
    "decode",
    "main",
    "sample_size",
]

SUCCESS = 0
INVALID_SHADER_DATA = 4
STATUS_NAMES = {
    1: "ERROR",
    2: "ERROR_OUT_OF_RESOURCES",
    3: "ERROR_INVALID_ARGUMENT",
    4: "ERROR_INVALID_SHADER_DATA",
    5: "ERROR_NOT_IMPLEMENTED",
}

# Bytes read per library call when decoding a file.
CHUNK_SIZE = 1 << 20


class StallReason(enum.IntEnum):
    """CUPTI's ``CUpti_ActivityPCSamplingStallReason`` numbering."""

    INVALID = 0
    NONE = 1
    INST_FETCH = 2
    EXEC_DEPENDENCY = 3
    MEMORY_DEPENDENCY = 4
    TEXTURE = 5
    SYNC = 6
    CONSTANT_MEMORY = 7
    PIPE_BUSY = 8
    MEMORY_THROTTLE = 9
    NOT_SELECTED = 10
    OTHER = 11
    SLEEPING = 12


class Sample(NamedTuple):
    """One PC sample. ``gpc``/``tpc``/``sm`` split ``tpc_id`` as ``gpc << 5 | tpc << 1 | sm``,
    which is meaningful only for captures whose driver enumerates SMs that way (tinygrad's)."""

    pc_offset: int
    stall_reason: StallReason
    stall_key: int
    wave_id: int
    active: bool
    tpc_id: int
    gpc: int
    tpc: int
    sm: int
    uninterpreted_bits: int


class Stats(NamedTuple):
    packets: int
    samples: int
    dropped_packets: int
    discarded_bytes: int
    malformed_packets: int
    buffered_bytes: int


class PmaError(RuntimeError):
    def __init__(self, status: int, what: str):
        name = STATUS_NAMES.get(status, "unknown status")
        super().__init__(f"{what}: status {status} ({name})")
        self.status = status


# rocprof_nv_pma_sample_t: u64 pc_offset, u16 tpc_id, u8 wave_id, stall_key, stall_reason,
# active, gpc, tpc, sm, uninterpreted_bits, 6 reserved bytes.
_SAMPLE_LAYOUT = struct.Struct("<QHBBBBBBBB6x")


class _Handle(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_uint64)]


class _Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in Stats._fields]


_SampleCallback = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p
)


_SIGNATURES = {
    "decoder_create": ([ctypes.POINTER(_Handle), ctypes.c_uint32], ctypes.c_int32),
    "decoder_destroy": ([_Handle], ctypes.c_int32),
    "decoder_feed": (
        [_Handle, ctypes.c_void_p, ctypes.c_uint64, _SampleCallback, ctypes.c_void_p],
        ctypes.c_int32,
    ),
    "decoder_reset": ([_Handle], ctypes.c_int32),
    "decoder_get_stats": ([_Handle, ctypes.POINTER(_Stats)], ctypes.c_int32),
    "sample_size": ([ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)], ctypes.c_int32),
    "stall_reason_string": ([ctypes.c_uint32], ctypes.c_char_p),
}


def _library_functions(lib_path: str | os.PathLike[str] | None = None) -> tuple[str, dict]:
    """The loaded library's path and its PMA functions (keyed without ``rocprof_nv_pma_``)."""
    library = load_library(lib_path)
    return library.path, library.functions("rocprof_nv_pma_", _SIGNATURES)


def _check(status: int, what: str) -> None:
    if status != SUCCESS:
        raise PmaError(status, what)


def sample_size(sm_version: int) -> int:
    """Bytes per sample record for a device (8 before the RTX 5090's 0xa04, else 9)."""
    _, functions = _library_functions()
    size = ctypes.c_uint32()
    _check(functions["sample_size"](sm_version, ctypes.byref(size)), "sample_size")
    return size.value


def stall_reason_name(reason: int) -> str:
    """The library's name of a stall reason ("UNKNOWN" outside the enum)."""
    _, functions = _library_functions()
    return functions["stall_reason_string"](reason).decode()


class Decoder:
    """A streaming decoder: feed chunks of any size, get the samples they complete. ``lib_path``
    overrides the library search; ``self.lib_path`` is what was loaded."""

    def __init__(self, sm_version: int = 0x800, lib_path: str | os.PathLike[str] | None = None):
        self.lib_path, self._functions = _library_functions(lib_path)
        self._handle = _Handle()
        status = self._functions["decoder_create"](ctypes.byref(self._handle), sm_version)
        _check(status, f"create (sm_version {sm_version:#x})")
        self._pending: list[Sample] = []
        self._callback = _SampleCallback(self._receive)

    def _receive(self, samples: int, count: int, _userdata: int) -> int:
        raw = ctypes.string_at(samples, count * _SAMPLE_LAYOUT.size)
        self._pending.extend(
            Sample(pc, StallReason(reason), key, wave, bool(active), tpc_id, gpc, tpc, sm, bits)
            for pc, tpc_id, wave, key, reason, active, gpc, tpc, sm, bits in (
                _SAMPLE_LAYOUT.iter_unpack(raw)
            )
        )
        return SUCCESS

    def feed(self, data: bytes | bytearray | memoryview) -> list[Sample]:
        """Decodes the next chunk. Malformed packets are skipped and counted in ``stats()``."""
        if self._handle.handle == 0:
            raise ValueError("decoder is closed")
        chunk = data if isinstance(data, bytes) else bytes(data)
        self._pending = []
        status = self._functions["decoder_feed"](
            self._handle, chunk, len(chunk), self._callback, None
        )
        if status not in (SUCCESS, INVALID_SHADER_DATA):
            raise PmaError(status, "feed")
        samples, self._pending = self._pending, []
        return samples

    def stats(self) -> Stats:
        stats = _Stats()
        status = self._functions["decoder_get_stats"](self._handle, ctypes.byref(stats))
        _check(status, "get_stats")
        return Stats(*(getattr(stats, name) for name in Stats._fields))

    def reset(self) -> None:
        _check(self._functions["decoder_reset"](self._handle), "reset")

    def close(self) -> None:
        if self._handle.handle != 0:
            self._functions["decoder_destroy"](self._handle)
            self._handle.handle = 0

    def __enter__(self) -> Decoder:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.close()


Source = Union[bytes, bytearray, memoryview, BinaryIO]


def _chunks(data: Source) -> Iterator[bytes | bytearray | memoryview]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        yield data
        return
    while chunk := data.read(CHUNK_SIZE):
        yield chunk


def decode(data: Source, sm_version: int = 0x800) -> Iterator[Sample]:
    """Yields the samples of one PMA stream (bytes, or a binary file read in chunks)."""
    with Decoder(sm_version) as decoder:
        for chunk in _chunks(data):
            yield from decoder.feed(chunk)
        malformed = decoder.stats().malformed_packets
    if malformed:
        warnings.warn(f"{malformed} malformed PMA packet(s) skipped", RuntimeWarning, stacklevel=2)


def aggregate(samples: Iterable[Sample]) -> Counter[tuple[int, StallReason]]:
    """Sample counts per (pc_offset, stall_reason)."""
    return collections.Counter((sample.pc_offset, sample.stall_reason) for sample in samples)


# ANSI colours of the stall reasons in the terminal output.
_COLOURS = {
    StallReason.NONE: "32",
    StallReason.INST_FETCH: "33",
    StallReason.EXEC_DEPENDENCY: "36",
    StallReason.MEMORY_DEPENDENCY: "31",
    StallReason.SYNC: "35",
    StallReason.CONSTANT_MEMORY: "34",
    StallReason.PIPE_BUSY: "93",
    StallReason.MEMORY_THROTTLE: "91",
}


class _Painter:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def reason(self, reason: StallReason, text: str) -> str:
        code = _COLOURS.get(reason)
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and code else text

    def bold(self, text: str) -> str:
        return f"\x1b[1m{text}\x1b[0m" if self.enabled else text


def format_sample(sample: Sample, paint: _Painter) -> str:
    reason = paint.reason(sample.stall_reason, f"{sample.stall_reason.name:17}")
    return (
        f"pc=0x{sample.pc_offset:06x} {reason} key={sample.stall_key:2d}"
        f" active={int(sample.active)} wave={sample.wave_id:2d}"
        f" gpc={sample.gpc} tpc={sample.tpc} sm={sample.sm}"
    )


def format_table(counts: Counter[tuple[int, StallReason]], paint: _Painter) -> list[str]:
    """Rows per PC (relative to the smallest PC), a column per stall reason present."""
    if not counts:
        return []
    base = min(pc for pc, _ in counts)
    reasons = sorted({reason for _, reason in counts})
    per_pc: dict[int, Counter[StallReason]] = collections.defaultdict(collections.Counter)
    for (pc, reason), count in counts.items():
        per_pc[pc][reason] += count
    widths = [max(len(reason.name), 7) for reason in reasons]
    header = paint.bold(f"{'pc offset':>10} {'samples':>8}") + " " + " ".join(
        paint.reason(reason, f"{reason.name:>{width}}")
        for reason, width in zip(reasons, widths)
    )
    lines = [f"base pc 0x{base:x}, {sum(counts.values())} samples", header]
    for pc in sorted(per_pc):
        row = per_pc[pc]
        top = max(row, key=lambda reason: row[reason])
        cells = []
        for reason, width in zip(reasons, widths):
            text = f"{row[reason]:>{width}}" if row[reason] else " " * (width - 1) + "."
            cells.append(paint.reason(reason, text) if reason == top else text)
        lines.append(f"{f'+0x{pc - base:x}':>10} {sum(row.values()):>8} " + " ".join(cells))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m rocprof_trace_decoder.pma",
        description="Decode an NVIDIA PMA PC-sampling stream: samples and per-PC stall table.",
    )
    parser.add_argument("file", help="raw PMA stream ('-' for standard input)")
    parser.add_argument(
        "--sm",
        type=lambda text: int(text, 0),
        default=0x800,
        help="device sm_version (packed compute capability), e.g. 0x800 or 0xa04; default 0x800",
    )
    parser.add_argument("--table-only", action="store_true", help="print only the stall table")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(argv)

    tty = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    paint = _Painter(args.color == "always" or (args.color == "auto" and tty))
    counts: Counter[tuple[int, StallReason]] = collections.Counter()
    try:
        source = open(args.file, "rb") if args.file != "-" else sys.stdin.buffer
        with source, Decoder(args.sm) as decoder:
            for chunk in _chunks(source):
                for sample in decoder.feed(chunk):
                    counts[(sample.pc_offset, sample.stall_reason)] += 1
                    if not args.table_only:
                        print(format_sample(sample, paint))
            stats = decoder.stats()
        print()
        print("\n".join(format_table(counts, paint)))
    except BrokenPipeError:
        raise
    except (OSError, PmaError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if stats.dropped_packets or stats.malformed_packets or stats.buffered_bytes:
        print(
            f"note: {stats.dropped_packets} dropped packet(s), {stats.malformed_packets} malformed"
            f" packet(s), {stats.discarded_bytes} discarded byte(s), {stats.buffered_bytes}"
            " trailing byte(s)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(1)

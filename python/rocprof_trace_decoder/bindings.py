"""ctypes binding of librocprof-trace-decoder (C ABI 0.3.0).

Record batches are copied out of the callback with ``struct`` over the raw
bytes: one unpack per array instead of one ctypes attribute access per field,
which matters for waves with hundreds of thousands of instructions.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, Union

from ._library import DecoderLoadError
from ._library import load as load_library
from .records import (
    DecoderStatus,
    Dispatch,
    Event,
    EventPayload,
    Instruction,
    Marker,
    MarkerFlags,
    MarkerKind,
    MarkerRecordKind,
    Occupancy,
    OtherSimdInstruction,
    Pc,
    PerfEvent,
    Realtime,
    RecordType,
    ShaderData,
    TraceRecords,
    Wave,
    WaveState,
)

__all__ = ["BytesLike", "Decoder", "DecoderError", "DecoderLoadError", "IsaProvider", "merge_records"]

BytesLike = Union[bytes, bytearray, memoryview]

_SYMBOL_PREFIX = "rocprof_trace_decoder_"
_IMMEDIATE_FLAG = 0x1
_RECORD_REQUEST_SIZE = 16
_RECORD_FILTER_SIZE = 24


class DecoderError(RuntimeError):
    """A decoder call returned a non-zero status."""

    def __init__(self, status: int, message: str | None = None):
        self.status = int(status)
        super().__init__(message or f"rocprof-trace-decoder returned status {self.status}")

    def __reduce__(self):
        # Keeps the status when the error crosses a process boundary.
        return (type(self), (self.status, str(self)))


class IsaProvider(Protocol):
    def isa_for_pc(self, pc: Pc) -> tuple[str, int] | None:
        """Instruction text and encoded size in bytes, or None when unknown."""


# --- C mirrors (only what crosses the boundary as a struct) ---------------------------------


class _Handle(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_uint64)]


class _PcInfo(ctypes.Structure):
    _fields_ = [("address", ctypes.c_uint64), ("code_object_id", ctypes.c_uint64)]


class _RecordRequest(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("type", ctypes.c_int), ("flags", ctypes.c_uint32)]


class _RecordFilter(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint64),
        ("records", ctypes.POINTER(_RecordRequest)),
        ("record_count", ctypes.c_uint64),
    ]


_TRACE_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p)
_ISA_CB = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ctypes.c_uint64),
    _PcInfo,
    ctypes.c_void_p,
)
_SE_DATA_CB = ctypes.CFUNCTYPE(
    ctypes.c_uint64,
    ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.c_void_p,
)

# (argtypes, restype) of every symbol the package binds; a library missing one is unusable.
_SIGNATURES = {
    "create_handle": ([ctypes.POINTER(_Handle)], ctypes.c_int),
    "destroy_handle": ([_Handle], ctypes.c_int),
    "codeobj_load": (
        [_Handle, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64],
        ctypes.c_int,
    ),
    "codeobj_unload": ([_Handle, ctypes.c_uint64], ctypes.c_int),
    "set_isa_callback": ([_Handle, _ISA_CB, ctypes.c_void_p], ctypes.c_int),
    "set_se_data_callback": ([_Handle, _SE_DATA_CB, ctypes.c_void_p], ctypes.c_int),
    "set_record_filter": ([_Handle, ctypes.POINTER(_RecordFilter)], ctypes.c_int),
    "parse": ([_Handle, ctypes.c_void_p, ctypes.c_uint64, _TRACE_CB, ctypes.c_void_p], ctypes.c_int),
    "get_info_string": ([ctypes.c_int], ctypes.c_char_p),
    "get_status_string": ([ctypes.c_int], ctypes.c_char_p),
}

# --- record layouts (x86-64, little endian; sizes checked against layout.json) --------------

_PERFEVENT = struct.Struct("<qHHHHBB6x")
_OCCUPANCY = struct.Struct("<QQQBBBBI")
_WAVE_STATE = struct.Struct("<ii")
_INST = struct.Struct("<IiqQQ")
_WAVE = struct.Struct("<8BQqqQQQQ")
_REALTIME = struct.Struct("<qQQ")
_SHADERDATA = struct.Struct("<qQBBBBI")
_MARKER = struct.Struct("<QqQBBBBIQQQQQIIIIIIiI")
_OTHER_SIMD = struct.Struct("<QqHBB4x")
_EVENT = struct.Struct("<QqiBBHQQ")
_DISPATCH = struct.Struct("<QqBBHiIIIIIIQQQQ")
_INFO = struct.Struct("<i")
_U64 = struct.Struct("<Q")


def _unpack_array(layout: struct.Struct, ptr: int, count: int) -> Iterable[tuple]:
    return layout.iter_unpack(ctypes.string_at(ptr, layout.size * count))


def _signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _c_string(ptr: int) -> str | None:
    return ctypes.string_at(ptr).decode("utf-8", errors="replace") if ptr else None


def _occupancy(row: tuple) -> Occupancy:
    pc_addr, pc_id, time, reserved, cu, simd, wave_id, bits = row
    return Occupancy(
        Pc(pc_addr, pc_id),
        time,
        reserved,
        cu,
        simd,
        wave_id,
        start=bits & 0x1,
        me_id=(bits >> 1) & 0x7,
        pipe_id=(bits >> 4) & 0xF,
        is_ext=(bits >> 8) & 0x1,
        workgroup_id=(bits >> 9) & 0x7F,
        cluster_id=(bits >> 16) & 0x1F,
    )


def _wave(row: tuple) -> Wave:
    (cu, simd, wave_id, contexts, dispatcher, workgroup_id, cluster_id, reserved,
     size, begin, end, timeline_size, inst_size, timeline_ptr, inst_ptr) = row  # fmt: skip
    timeline = []
    if timeline_ptr and timeline_size:
        timeline = [WaveState(t, d) for t, d in _unpack_array(_WAVE_STATE, timeline_ptr, timeline_size)]
    instructions = []
    if inst_ptr and inst_size:
        pcs: dict[tuple[int, int], Pc] = {}
        for packed, duration, time, addr, code_object_id in _unpack_array(_INST, inst_ptr, inst_size):
            key = (addr, code_object_id)
            pc = pcs.get(key)
            if pc is None:
                pc = pcs[key] = Pc(addr, code_object_id)
            instructions.append(Instruction(packed & 0xFF, packed >> 8, duration, time, pc))
    return Wave(cu, simd, wave_id, contexts, dispatcher, workgroup_id, cluster_id, reserved,
                size, begin, end, timeline, instructions)  # fmt: skip


def _shaderdata(row: tuple) -> ShaderData:
    return ShaderData(*row)


def _marker(row: tuple) -> Marker:
    (size, sd_time, sd_value, sd_cu, sd_simd, sd_wave, sd_flags, sd_reserved, entry_addr, entry_id,
     code_object_id, name_ptr, source_ptr, marker_id, record_kind, marker_kind, marker_flags,
     payload_index, payload_count, delay, reserved) = row  # fmt: skip
    return Marker(
        size,
        ShaderData(sd_time, sd_value, sd_cu, sd_simd, sd_wave, sd_flags, sd_reserved),
        Pc(entry_addr, entry_id),
        code_object_id,
        _c_string(name_ptr),
        _c_string(source_ptr),
        marker_id,
        MarkerRecordKind(record_kind),
        MarkerKind(marker_kind),
        MarkerFlags(marker_flags),
        payload_index,
        payload_count,
        delay,
        reserved,
    )


def _event(row: tuple) -> Event:
    size, time, type_, me_id, pipe_id, flags, payload, byte_offset = row
    return Event(
        size,
        time,
        type_,
        me_id,
        pipe_id,
        flags,
        EventPayload(payload, payload, _signed32(payload & 0xFFFFFFFF), _signed32(payload >> 32)),
        byte_offset,
    )


def _dispatch(row: tuple) -> Dispatch:
    *fields, entry_addr, entry_id = row
    return Dispatch(*fields, entry_point=Pc(entry_addr, entry_id))


# record type -> (layout, row converter, TraceRecords list attribute)
_ARRAY_RECORDS: dict[RecordType, tuple[struct.Struct, Callable[[tuple], object], str]] = {
    RecordType.OCCUPANCY: (_OCCUPANCY, _occupancy, "occupancy"),
    RecordType.PERFEVENT: (_PERFEVENT, lambda r: PerfEvent(*r), "perf_events"),
    RecordType.WAVE: (_WAVE, _wave, "waves"),
    RecordType.EVENT: (_EVENT, _event, "events"),
    RecordType.SHADERDATA: (_SHADERDATA, _shaderdata, "shaderdata"),
    RecordType.REALTIME: (_REALTIME, lambda r: Realtime(*r), "realtime"),
    RecordType.INST_OTHER_SIMD: (_OTHER_SIMD, lambda r: OtherSimdInstruction(*r), "other_simd"),
    RecordType.DISPATCH: (_DISPATCH, _dispatch, "dispatches"),
    RecordType.MARKER: (_MARKER, _marker, "markers"),
}


def _store_batch(records: TraceRecords, record_type: RecordType, ptr: int | None, size: int) -> list | int:
    """Convert one callback batch, add it to ``records`` and return it."""
    if record_type == RecordType.GFXIP:
        records.gfxip = int(ptr or 0)
        return records.gfxip
    if not ptr or size <= 0:
        return []
    if record_type == RecordType.RT_FREQUENCY:
        (records.realtime_frequency,) = _U64.unpack(ctypes.string_at(ptr, _U64.size))
        return records.realtime_frequency
    if record_type == RecordType.INFO:
        batch = [code for (code,) in _unpack_array(_INFO, ptr, size)]
        records.info.extend(batch)
        return batch
    layout, convert, attribute = _ARRAY_RECORDS[record_type]
    batch = [convert(row) for row in _unpack_array(layout, ptr, size)]
    getattr(records, attribute).extend(batch)
    return batch


def merge_records(dst: TraceRecords, src: TraceRecords) -> TraceRecords:
    """Append ``src`` to ``dst``; later gfxip / realtime frequency values win."""
    if src.gfxip is not None:
        dst.gfxip = src.gfxip
    if src.realtime_frequency is not None:
        dst.realtime_frequency = src.realtime_frequency
    for name in ("info", "occupancy", "perf_events", "waves", "events", "shaderdata", "realtime",
                 "other_simd", "dispatches", "markers", "batches"):  # fmt: skip
        getattr(dst, name).extend(getattr(src, name))
    return dst


# --- the handle ------------------------------------------------------------------------------


class Decoder:
    """One decoder handle. Use as a context manager or call ``close()``. ``lib_path`` overrides the
    library search of ``_library`` (the one PMA uses too); ``self.lib_path`` is what was loaded."""

    def __init__(self, lib_path: str | os.PathLike[str] | None = None):
        library = load_library(lib_path)
        self.lib_path = library.path
        self._functions = library.functions(_SYMBOL_PREFIX, _SIGNATURES)
        self._handle: _Handle | None = _Handle()
        self._isa_callback = None
        self._record_filter = None
        self._check(self._functions["create_handle"](ctypes.byref(self._handle)))

    def __enter__(self) -> Decoder:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        self._isa_callback = None
        self._record_filter = None
        self._check(self._functions["destroy_handle"](handle))

    # -- strings

    def info_string(self, info: int) -> str:
        return self._string("get_info_string", info)

    def status_string(self, status: int) -> str:
        return self._string("get_status_string", status)

    # -- code objects (built-in disassembly mode)

    def load_code_object(self, data: BytesLike | str | os.PathLike[str], load_id: int, load_addr: int,
                         load_size: int) -> None:  # fmt: skip
        """Load code-object bytes, or the file at ``data`` when it is not bytes-like."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            self._load_code_object_bytes(bytes(data), load_id, load_addr, load_size)
        else:
            self.load_code_object_file(data, load_id, load_addr, load_size)

    def load_code_object_file(self, path: str | os.PathLike[str], load_id: int, load_addr: int,
                              load_size: int) -> None:  # fmt: skip
        self._load_code_object_bytes(Path(path).read_bytes(), load_id, load_addr, load_size)

    def load_code_object_data(self, load_id: int, load_addr: int, load_size: int, data: BytesLike) -> None:
        """Compatibility spelling of ``load_code_object`` (argument order of the original wrapper)."""
        self._load_code_object_bytes(bytes(data), load_id, load_addr, load_size)

    def unload_code_object(self, load_id: int) -> None:
        self._check(self._functions["codeobj_unload"](self._live_handle(), load_id))

    def _load_code_object_bytes(self, blob: bytes, load_id: int, load_addr: int, load_size: int) -> None:
        buffer = ctypes.create_string_buffer(blob, len(blob))
        self._check(
            self._functions["codeobj_load"](self._live_handle(), load_id, load_addr, load_size, buffer, len(blob))
        )

    # -- record filter

    def set_record_filter(self, record_types: Iterable[int] | None = None, *,
                          immediate: Iterable[int] = ()) -> None:  # fmt: skip
        """Restrict the delivered record types; ``None`` restores every type, pooled.

        ``immediate`` types (marker, shaderdata, occupancy, realtime) are delivered one record
        per callback as soon as they are known; they must also appear in ``record_types``.
        """
        immediate_types = [RecordType(t) for t in immediate]
        if record_types is None:
            if immediate_types:
                raise ValueError("immediate record types require an explicit record filter")
            self._check(self._functions["set_record_filter"](self._live_handle(), None))
            self._record_filter = None
            return
        types = [RecordType(t) for t in record_types]
        missing = [t.name for t in immediate_types if t not in types]
        if missing:
            raise ValueError(f"immediate record types must also be requested: {', '.join(missing)}")
        requests = (_RecordRequest * len(types))(
            *(_RecordRequest(_RECORD_REQUEST_SIZE, t, _IMMEDIATE_FLAG if t in immediate_types else 0) for t in types)
        )
        record_filter = _RecordFilter(
            _RECORD_FILTER_SIZE,
            ctypes.cast(requests, ctypes.POINTER(_RecordRequest)) if types else None,
            len(types),
        )
        self._check(self._functions["set_record_filter"](self._live_handle(), ctypes.byref(record_filter)))
        self._record_filter = (requests, record_filter)

    # -- parsing

    def parse(self, data: BytesLike, isa: IsaProvider | None = None,
              on_batch: Callable[[RecordType, list | int], None] | None = None) -> TraceRecords:  # fmt: skip
        """Decode one complete trace buffer (one shader engine's stream)."""
        handle = self._live_handle()
        blob = data if isinstance(data, bytes) else bytes(data)
        self._install_isa(handle, isa)
        records = TraceRecords()
        failure: list[BaseException] = []

        def on_trace(record_type: int, events: int | None, size: int, _userdata) -> int:
            if failure:
                return DecoderStatus.ERROR
            try:
                kind = RecordType(record_type)
                batch = _store_batch(records, kind, events, size)
                records.batches.append((kind, batch))
                if on_batch is not None:
                    on_batch(kind, batch)
            except BaseException as exc:  # re-raised after parse returns
                failure.append(exc)
                return DecoderStatus.ERROR
            return DecoderStatus.SUCCESS

        trace_callback = _TRACE_CB(on_trace)
        status = self._functions["parse"](handle, blob if blob else None, len(blob), trace_callback, None)
        if failure:
            raise failure[0]
        self._check(status)
        return records

    def parse_file(self, path: str | os.PathLike[str], isa: IsaProvider | None = None,
                   on_batch: Callable[[RecordType, list | int], None] | None = None) -> TraceRecords:  # fmt: skip
        return self.parse(Path(path).read_bytes(), isa=isa, on_batch=on_batch)

    def parse_chunks(self, chunks: Iterable[BytesLike], isa: IsaProvider | None = None,
                     on_batch: Callable[[RecordType, list | int], None] | None = None) -> TraceRecords:  # fmt: skip
        """Decode each chunk as its own complete trace buffer and merge the results."""
        merged = TraceRecords()
        for chunk in chunks:
            merge_records(merged, self.parse(chunk, isa=isa, on_batch=on_batch))
        return merged

    # -- internals

    def _install_isa(self, handle: _Handle, isa: IsaProvider | None) -> None:
        if isa is None:
            callback = ctypes.cast(None, _ISA_CB)
        else:
            callback = _ISA_CB(_isa_answerer(isa))
        self._check(self._functions["set_isa_callback"](handle, callback, None))
        self._isa_callback = callback  # the library keeps the pointer until the next parse

    def _live_handle(self) -> _Handle:
        if self._handle is None:
            raise DecoderError(DecoderStatus.ERROR_INVALID_ARGUMENT, "Decoder handle is closed")
        return self._handle

    def _string(self, function: str, value: int) -> str:
        text = self._functions[function](int(value))
        return text.decode("utf-8", errors="replace") if text else ""

    def _check(self, status: int) -> None:
        if status != DecoderStatus.SUCCESS:
            text = self._functions["get_status_string"](int(status))
            raise DecoderError(status, text.decode("utf-8", errors="replace") if text else None)


def _isa_answerer(isa: IsaProvider) -> Callable:
    """ISA callback body: answers are encoded once per PC."""
    answers: dict[tuple[int, int], tuple[bytes, int] | None] = {}

    def answer(instruction, memory_size, size, pc: _PcInfo, _userdata) -> int:
        key = (pc.address, pc.code_object_id)
        if key not in answers:
            try:
                found = isa.isa_for_pc(Pc(pc.address, pc.code_object_id))
            except Exception:
                return DecoderStatus.ERROR
            answers[key] = None if found is None else (found[0].encode("utf-8"), max(int(found[1]), 4))
        found = answers[key]
        if found is None:
            return DecoderStatus.ERROR_INVALID_ARGUMENT
        text, encoded_size = found
        capacity = size[0]
        size[0] = len(text)
        memory_size[0] = encoded_size
        if len(text) > capacity:
            return DecoderStatus.ERROR_OUT_OF_RESOURCES
        ctypes.memmove(instruction, text, len(text))
        return DecoderStatus.SUCCESS

    return answer

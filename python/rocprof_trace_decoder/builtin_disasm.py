"""Disassembly with the decoder library's built-in AMDGPU tables, for machines without llvm-objdump.

``rocprof_trace_decoder_builtin_disassemble`` (``rocprof_trace_decoder_disasm.h``, an extra of
this library beyond the 0.3.0 API) gives each instruction's size and LLVM's mnemonic, with the
16-bit immediate of branches (``s_cbranch_execz 43``, the form the decoder's PC stitcher reads);
no other operands. :func:`code_object_disassembly` lists a code object as ``llvm-objdump -d``
does: the same addresses, and a dword the tables do not know as llvm-objdump lists a word it
cannot decode (``.long 0x...``), never as a guessed instruction.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Callable
from pathlib import Path

from ._library import DecoderLoadError, load

__all__ = ["BuiltinDisassemblyError", "code_object_disassembly", "disassemble", "target_of"]

EM_AMDGPU = 224
SHF_EXECINSTR = 0x4
_DWORD = 4
# llvm-objdump -d prints "..." for a run of at least this many zero bytes where an instruction
# would start (up to the next symbol), and goes on after the run's whole dwords.
_SKIPPED_ZERO_RUN = 8
_NONZERO_BYTE = re.compile(rb"[^\0]")

_SUCCESS = 0
_NOT_IMPLEMENTED = 5
# What the instruction callback answers to stop a disassembly early.
_STOP = -1

# EF_AMDGPU_MACH_* (the low byte of e_flags): the processor an AMDGPU code object is for
# (LLVM's AMDGPUUsage, "AMDGPU ELF Header").
EF_AMDGPU_MACHS = {
    0x20: "gfx600", 0x21: "gfx601", 0x22: "gfx700", 0x23: "gfx701", 0x24: "gfx702", 0x25: "gfx703",
    0x26: "gfx704", 0x28: "gfx801", 0x29: "gfx802", 0x2A: "gfx803", 0x2B: "gfx810", 0x2C: "gfx900",
    0x2D: "gfx902", 0x2E: "gfx904", 0x2F: "gfx906", 0x30: "gfx908", 0x31: "gfx909", 0x32: "gfx90c",
    0x33: "gfx1010", 0x34: "gfx1011", 0x35: "gfx1012", 0x36: "gfx1030", 0x37: "gfx1031", 0x38: "gfx1032",
    0x39: "gfx1033", 0x3A: "gfx602", 0x3B: "gfx705", 0x3C: "gfx805", 0x3D: "gfx1035", 0x3E: "gfx1034",
    0x3F: "gfx90a", 0x40: "gfx940", 0x41: "gfx1100", 0x42: "gfx1013", 0x43: "gfx1150", 0x44: "gfx1103",
    0x45: "gfx1036", 0x46: "gfx1101", 0x47: "gfx1102", 0x48: "gfx1200", 0x49: "gfx1250", 0x4A: "gfx1151",
    0x4B: "gfx941", 0x4C: "gfx942", 0x4E: "gfx1201", 0x4F: "gfx950", 0x51: "gfx9-generic",
    0x52: "gfx10-1-generic", 0x53: "gfx10-3-generic", 0x54: "gfx11-generic", 0x55: "gfx1152", 0x58: "gfx1153",
    0x59: "gfx12-generic", 0x5F: "gfx9-4-generic",
}  # fmt: skip

_INSTRUCTION_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p,
                                         ctypes.c_void_p)  # fmt: skip
_SIGNATURES = {
    "builtin_disassemble": ([ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                             _INSTRUCTION_CALLBACK, ctypes.c_void_p], ctypes.c_int32),
}  # fmt: skip

# visit(address, size, text or None) -> whether to go on.
Visitor = Callable[[int, int, "str | None"], bool]


class BuiltinDisassemblyError(ValueError):
    """The built-in tables cannot disassemble this code (its target, or the code object itself)."""


class _Disassembler:
    """The library's built-in disassembly function over one copy of the code in C memory."""

    def __init__(self, lib_path: str | os.PathLike[str] | None, code: bytes):
        library = load(lib_path)
        try:
            self.function = library.functions("rocprof_trace_decoder_", _SIGNATURES)["builtin_disassemble"]
        except DecoderLoadError as exc:
            raise DecoderLoadError(f"{exc} (a library too old for built-in disassembly)") from exc
        self.library_path = library.path
        self.buffer = ctypes.create_string_buffer(code, len(code))

    def run(self, target: str, offset: int, size: int, address: int, visit: Visitor) -> None:
        """Disassembles ``size`` bytes from ``offset`` of the code, loaded at ``address``."""
        stopped = False

        @_INSTRUCTION_CALLBACK
        def on_instruction(at: int, length: int, text: bytes | None, _userdata) -> int:
            nonlocal stopped
            if visit(at, length, None if text is None else text.decode("ascii", errors="replace")):
                return _SUCCESS
            stopped = True
            return _STOP

        start = ctypes.addressof(self.buffer) + offset
        status = self.function(target.encode(), start, size, address, on_instruction, None)
        if stopped:
            return
        if status == _NOT_IMPLEMENTED:
            raise BuiltinDisassemblyError(f"the built-in disassembly of {self.library_path} does not know {target}")
        if status != _SUCCESS:
            raise RuntimeError(f"built-in disassembly for {target} failed with status {status}")


def disassemble(target: str, code: bytes, address: int,
                lib_path: str | os.PathLike[str] | None = None) -> list[tuple[int, int, str | None]]:  # fmt: skip
    """[(address, size, text)] of every instruction of ``code`` (whole dwords) loaded at
    ``address`` for processor ``target``; text is None for a dword the tables do not know."""
    found: list[tuple[int, int, str | None]] = []

    def keep(at: int, size: int, text: str | None) -> bool:
        found.append((at, size, text))
        return True

    _Disassembler(lib_path, code).run(target, 0, len(code), address, keep)
    return found


def target_of(elf) -> str:
    """The processor an ELF code object (a pyelftools ELFFile) names in its header."""
    if elf["e_machine"] not in ("EM_AMDGPU", EM_AMDGPU):  # pyelftools names the machines it knows
        raise BuiltinDisassemblyError(f"not an AMDGPU code object (e_machine {elf['e_machine']})")
    mach = elf["e_flags"] & 0xFF
    if mach not in EF_AMDGPU_MACHS:
        raise BuiltinDisassemblyError(f"unknown AMDGPU processor (EF_AMDGPU_MACH {mach:#x})")
    return EF_AMDGPU_MACHS[mach]


def _regions(elf) -> list[tuple[int, bytes, list[int]]]:
    """(vaddr, bytes, symbol offsets) of each executable section. llvm-objdump disassembles each
    symbol's range on its own: an instruction never runs across the start of the next symbol."""
    regions = []
    for index, section in enumerate(elf.iter_sections()):
        if not section["sh_flags"] & SHF_EXECINSTR or section["sh_type"] == "SHT_NOBITS":
            continue
        data, vaddr = section.data(), section["sh_addr"]
        starts = {0}
        for table in (elf.get_section_by_name(".symtab"), elf.get_section_by_name(".dynsym")):
            for symbol in table.iter_symbols() if table is not None else []:
                if symbol["st_shndx"] == index and symbol["st_info"]["type"] in ("STT_FUNC", "STT_NOTYPE"):
                    offset = symbol["st_value"] - vaddr
                    if 0 <= offset < len(data):
                        starts.add(offset)
        regions.append((vaddr, data, sorted(starts)))
    return regions


def _list_symbol_range(disassembler: _Disassembler, target: str, vaddr: int, data: bytes, start: int, end: int,
                      out: list[tuple[int, str]]) -> None:  # fmt: skip
    """Appends llvm-objdump's listing of ``data[start:end]`` (one symbol's range) to ``out``."""
    offset = start
    while offset < end:
        resume = end

        def visit(at: int, _size: int, text: str | None) -> bool:
            nonlocal resume
            here = at - vaddr
            if data[here : here + _SKIPPED_ZERO_RUN] == bytes(_SKIPPED_ZERO_RUN) and here + _SKIPPED_ZERO_RUN <= end:
                nonzero = _NONZERO_BYTE.search(data, here, end)
                zeros = (nonzero.start() if nonzero else end) - here
                resume = here + zeros - zeros % _DWORD
                return False
            if text is None:
                text = f".long {int.from_bytes(data[here : here + _DWORD], 'little'):#010x}"
            out.append((at, text))
            return True

        # Instructions are whole dwords: a trailing partial one holds none.
        size = (end - offset) - (end - offset) % _DWORD
        disassembler.run(target, offset, size, vaddr + offset, visit)
        offset = resume


def code_object_disassembly(elf_path: str | Path,
                            lib_path: str | os.PathLike[str] | None = None) -> list[tuple[int, str]]:  # fmt: skip
    """[(vaddr, instruction text)] of every executable section, as ``llvm-objdump -d`` lists them."""
    from elftools.elf.elffile import ELFFile

    with Path(elf_path).open("rb") as handle:
        elf = ELFFile(handle)
        try:
            target = target_of(elf)
        except BuiltinDisassemblyError as exc:
            raise BuiltinDisassemblyError(f"{elf_path}: {exc}") from exc
        regions = _regions(elf)
    instructions: list[tuple[int, str]] = []
    for vaddr, data, starts in regions:
        disassembler = _Disassembler(lib_path, data)
        for start, end in zip(starts, [*starts[1:], len(data)]):
            _list_symbol_range(disassembler, target, vaddr, data, start, end, instructions)
    return instructions

#!/usr/bin/env python3
"""Regenerates src/isa/builtin/tables/<target>.txt: the built-in disassembler's instruction tables,
measured from LLVM's AMDGPU disassembler (libLLVM's C API, the code behind llvm-mc and llvm-objdump).

usage: scripts/gen_isa_tables.py [--check] [TARGET ...]
  --check  compare with the committed tables instead of writing them (exit 1 when they differ)

A target whose table equals an earlier target's gets a line `target earlier` in aliases.txt
instead of a file of its own.

The encoding knowledge lives here, in FORMATS: for each family, the formats in match order, each
with the dword-0 bits that identify it, the bit fields that make its key (the opcode, plus fixed
bits next to it that decide the mnemonic), the source fields where 255 means "a 32-bit literal
follows", and the variants (DPP, SDWA, DPP8, NSA address dwords) chosen by a field's value. For
every key of every format and variant the script asks LLVM, with a few operand patterns (BASES),
for the instruction's mnemonic and size, and whether each literal field adds a dword. The table
file repeats the format definitions, so the Rust decoder (src/isa/builtin/) is generic.

Two-part encodings (gfx950's v_mfma_scale_*: a v_mfma_ld_scale_b32 encoding followed by an
MFMA's, 16 bytes) are found by sweep: for every key of the PAIR_HOST format LLVM decodes alone,
every such key is tried as dwords 2-3; a first half with 16-byte answers gets a format of its own
before the host's, identified by bits of dwords 0-3 and keyed on the second half's opcode.

Table lines (`#` starts a comment):
  F name mask value keyfields litfields zerofields [variant=word.lo.width.value ...]
      mask and value: hexadecimal dwords joined with `.` from dword 0 (more than one for a
      two-part encoding, which falls through to the next matching format without a row)
      fields are `word.lo.width` joined with `+` (most significant first), `-` for none
  R format variant keylo keyhi size literal-mask invalid-mask zero-mask imm mnemonic
      one run of consecutive keys with the same answer; variant 0 is the plain encoding, n the
      format's n-th variant; literal-mask bit i: literal field i adds a dword when it is 255;
      invalid-mask bit i: LLVM rejects the instruction when literal field i is 255; zero-mask
      bit i: LLVM rejects it when zero field i is not 0 (an unused operand); imm 1: LLVM prints
      the 16-bit immediate (bits 0-15) as an unsigned decimal after the mnemonic (branches)
"""

import argparse
import ast
import ctypes
import os
import pathlib
import sys

OUT = pathlib.Path(__file__).resolve().parent.parent / "src" / "isa" / "builtin" / "tables"

# target -> LLVM major measured (19 made the corpus' answers; only 22 knows gfx950)
TARGETS = {
    "gfx90a": 19, "gfx942": 19, "gfx950": 22, "gfx1030": 19, "gfx1100": 19, "gfx1101": 19,
    "gfx1102": 19, "gfx1151": 19, "gfx1200": 19, "gfx1201": 19,
}


def family(target):
    if target.startswith("gfx9"):
        return "gfx9"
    return target[:5]  # gfx10, gfx11, gfx12


def f(word, lo, width):
    return (word, lo, width)


SRC0 = f(0, 0, 9)
VSRC0 = f(1, 0, 9)
VOP3_LIT = [f(1, 0, 9), f(1, 9, 9), f(1, 18, 9)]
SOFFSET = f(1, 24, 8)  # buffer instructions' soffset: 255 is a literal too


def dpp_variants(field, sdwa):
    out = [(field, 0xFA)]
    if sdwa:
        out.append((field, 0xF9))
    return out + [(field, 0xE9), (field, 0xEA)]


def scalar_formats():
    return [
        ("SOP1", 0xFF800000, 0xBE800000, [f(0, 8, 8)], [f(0, 0, 8)], []),
        ("SOPC", 0xFF800000, 0xBF000000, [f(0, 16, 7)], [f(0, 0, 8), f(0, 8, 8)], []),
        ("SOPP", 0xFF800000, 0xBF800000, [f(0, 16, 7)], [], []),
        ("SOPK", 0xF0000000, 0xB0000000, [f(0, 23, 5)], [], []),
        ("SOP2", 0xC0000000, 0x80000000, [f(0, 23, 7)], [f(0, 0, 8), f(0, 8, 8)], []),
    ]


def vector_formats(sdwa):
    v = dpp_variants(SRC0, sdwa)
    return [
        ("VOPC", 0xFE000000, 0x7C000000, [f(0, 17, 8)], [SRC0], v),
        ("VOP1", 0xFE000000, 0x7E000000, [f(0, 9, 8)], [SRC0], v),
        ("VOP2", 0x80000000, 0x00000000, [f(0, 25, 6)], [SRC0], v),
    ]


# Key fields go most significant first: the opcode, then fixed bits beside it (cache policy,
# segment), so that runs of keys with one answer stay long.
FORMATS = {
    "gfx9": scalar_formats() + vector_formats(True) + [
        ("SMEM", 0xFC000000, 0xC0000000, [f(0, 14, 12)], [], []),
        ("EXP", 0xFC000000, 0xC4000000, [], [], []),
        ("VOP3", 0xFC000000, 0xD0000000, [f(0, 16, 10)], VOP3_LIT, []),
        ("VINTRP", 0xFC000000, 0xD4000000, [f(0, 16, 2)], [], []),
        ("DS", 0xFC000000, 0xD8000000, [f(0, 16, 10)], [], []),
        ("FLAT", 0xFC000000, 0xDC000000, [f(0, 14, 2), f(0, 18, 8), f(0, 16, 2), f(0, 13, 1)], [], []),
        ("MUBUF", 0xFC000000, 0xE0000000, [f(0, 16, 10)], [SOFFSET], []),
        ("MTBUF", 0xFC000000, 0xE8000000, [f(0, 15, 4)], [SOFFSET], []),
        ("MIMG", 0xFC000000, 0xF0000000, [f(0, 18, 8)], [], []),
    ],
    "gfx10": scalar_formats() + vector_formats(True) + [
        ("VINTRP", 0xFC000000, 0xC8000000, [f(0, 16, 2)], [], []),
        ("VOP3P", 0xFF000000, 0xCC000000, [f(0, 16, 7)], VOP3_LIT, []),
        ("VOP3", 0xFC000000, 0xD4000000, [f(0, 16, 10)], VOP3_LIT, []),
        ("DS", 0xFC000000, 0xD8000000, [f(0, 16, 10)], [], []),
        ("FLAT", 0xFC000000, 0xDC000000, [f(0, 14, 12)], [], []),
        ("MUBUF", 0xFC000000, 0xE0000000, [f(0, 16, 10)], [SOFFSET], []),
        ("MTBUF", 0xFC000000, 0xE8000000, [f(0, 16, 3), f(1, 21, 1)], [SOFFSET], []),
        ("MIMG", 0xFC000000, 0xF0000000, [f(0, 18, 8), f(0, 0, 1)], [],
         [(f(0, 1, 2), 1), (f(0, 1, 2), 2), (f(0, 1, 2), 3)]),
        ("SMEM", 0xFC000000, 0xF4000000, [f(0, 14, 12)], [], []),
        ("EXP", 0xFC000000, 0xF8000000, [], [], []),
    ],
    "gfx11": scalar_formats() + vector_formats(False) + [
        ("VOP3P", 0xFF000000, 0xCC000000, [f(0, 16, 7)], VOP3_LIT, dpp_variants(VSRC0, False)),
        ("VINTERP", 0xFF000000, 0xCD000000, [f(0, 16, 7)], [], []),
        ("LDSDIR", 0xFF000000, 0xCE000000, [f(0, 20, 2)], [], []),
        ("VOPD", 0xFC000000, 0xC8000000, [f(0, 17, 9)], [SRC0, VSRC0], []),
        ("VOP3", 0xFC000000, 0xD4000000, [f(0, 16, 10)], VOP3_LIT, dpp_variants(VSRC0, False)),
        ("DS", 0xFC000000, 0xD8000000, [f(0, 17, 9)], [], []),
        ("FLAT", 0xFC000000, 0xDC000000, [f(0, 16, 10)], [], []),
        ("MUBUF", 0xFC000000, 0xE0000000, [f(0, 16, 10)], [SOFFSET], []),
        ("MTBUF", 0xFC000000, 0xE8000000, [f(0, 15, 4)], [SOFFSET], []),
        ("MIMG", 0xFC000000, 0xF0000000, [f(0, 18, 8)], [], [(f(0, 0, 1), 1)]),
        ("SMEM", 0xFC000000, 0xF4000000, [f(0, 13, 13)], [], []),
        ("EXP", 0xFC000000, 0xF8000000, [], [], []),
    ],
    "gfx12": scalar_formats() + vector_formats(False) + [
        ("VBUFFER", 0xFC000000, 0xC4000000, [f(0, 14, 8), f(0, 22, 4)], [], []),
        ("VOP3P", 0xFF000000, 0xCC000000, [f(0, 16, 7)], VOP3_LIT, dpp_variants(VSRC0, False)),
        ("VINTERP", 0xFF000000, 0xCD000000, [f(0, 16, 7)], [], []),
        ("VDSDIR", 0xFF000000, 0xCE000000, [f(0, 20, 2)], [], []),
        ("VOPD", 0xFC000000, 0xC8000000, [f(0, 17, 9)], [SRC0, VSRC0], []),
        ("VIMAGE", 0xFC000000, 0xD0000000, [f(0, 14, 8), f(0, 22, 4)], [], []),
        ("VOP3", 0xFC000000, 0xD4000000, [f(0, 16, 10)], VOP3_LIT, dpp_variants(VSRC0, False)),
        ("DS", 0xFC000000, 0xD8000000, [f(0, 17, 9)], [], []),
        ("VSAMPLE", 0xFC000000, 0xE4000000, [f(0, 14, 8), f(0, 22, 4)], [], []),
        ("FLAT", 0xFC000000, 0xEC000000, [f(0, 24, 2), f(0, 14, 7), f(0, 21, 3)], [], []),
        ("SMEM", 0xFC000000, 0xF4000000, [f(0, 13, 8), f(0, 21, 5)], [], []),
        ("EXP", 0xFC000000, 0xF8000000, [], [], []),
    ],
}

# Fields LLVM may require to be zero when the instruction does not use them (an unused source
# or data register); measured per key: rejected with a VGPR and with an SGPR there.
ZERO_FIELDS = {
    "VOP3": [f(1, 0, 9), f(1, 9, 9), f(1, 18, 9)],
    "VOP3P": [f(1, 0, 9), f(1, 9, 9), f(1, 18, 9)],
    "DS": [f(1, 0, 8), f(1, 8, 8), f(1, 16, 8), f(1, 24, 8)],
}
ZERO_PROBES = {9: (0x101, 0x001), 8: (0x01, 0x30)}

# Operand patterns (dwords 0-2; dword 0 only outside the format's prefix and key bits), tried in
# order until LLVM accepts one: memory instructions need an address register that says "off"
# (gfx9 0x7F, gfx10 0x7D, gfx11 0x7C in dword 1, gfx12 0x7C in dword 0), images a channel mask
# and BVH images the field values of an assembled `image_bvh_intersect_ray`.
MEMORY_LOWS = [0x0000, 0x0F00, 0x007C, 0x0F7C, 0x9F01, 0x8F80, 0x4010, 0x0100]
MEMORY_SECONDS = [0x00000000, 0x007C0000, 0x007D0000, 0x007F0000, 0x00010409, 0x11000804]
MEMORY = {"FLAT", "MUBUF", "MTBUF", "MIMG", "VBUFFER", "VIMAGE", "VSAMPLE"}


# Vector instructions: SGPR or VGPR sources (some take only VGPRs), and the source fields of
# assembled WMMA / SWMMAC instructions.
VOP3_SECONDS = [0, 0x100, 0x00020100, 0x04020100, 0x1A061108, 0x1CC24110]
VECTOR = {"VOPC", "VOP1", "VOP2"}


# Two-part encodings (see pairs()): the format whose keys may start one, and the operands tried
# (dword 1, dword 2 outside the second half's format and key bits, dword 3): VGPR sources, and
# bit 11 of dword 2 as in an assembled v_mfma_scale_f32_16x16x128_f8f6f4.
PAIR_HOST = {"gfx9": "VOP3", "gfx10": "VOP3P", "gfx11": "VOP3P", "gfx12": "VOP3P"}
PAIR_BASES = [[0x100, 0x0800, 0x04020100], [0, 0, 0]]


def bases(name):
    if name in MEMORY:
        return [[lo, second, 0] for lo in MEMORY_LOWS for second in MEMORY_SECONDS]
    if name == "VOP3":
        return [[0, second, 0] for second in VOP3_SECONDS]
    if name == "VOP3P":
        # gfx12's FP8 dot and WMMA opcodes also want op_sel_hi[2] (bit 14) set.
        return [[low, second, 0] for low in (0, 0x4000) for second in VOP3_SECONDS]
    if name in VECTOR:
        return [[0, 0, 0], [0x100, 0, 0], [0x110, 0, 0]]
    if name == "VOPD":
        return [[0, 0, 0], [0x100, 0x100, 0]]
    if name == "DS":
        return [[0, 0, 0], [0, 0x20403000, 0]]
    return [[0, 0, 0]]


class Llvm:
    def __init__(self, major):
        lib = ctypes.CDLL(f"/usr/lib/llvm-{major}/lib/libLLVM.so.{major}.1")
        for name in ("TargetInfo", "TargetMC", "Disassembler"):
            getattr(lib, f"LLVMInitializeAMDGPU{name}")()
        lib.LLVMCreateDisasmCPU.restype = ctypes.c_void_p
        lib.LLVMCreateDisasmCPU.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                                            ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        lib.LLVMDisasmInstruction.restype = ctypes.c_size_t
        lib.LLVMDisasmInstruction.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64,
                                              ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
        self.lib = lib
        self.buffer = ctypes.create_string_buffer(1024)

    def open(self, cpu):
        self.context = self.lib.LLVMCreateDisasmCPU(b"amdgcn-amd-amdhsa", cpu.encode(), None, 0,
                                                    None, None)

    def decode(self, words):
        """(size, text) of the instruction `words` (dwords, zero-padded) start, or None."""
        data = b"".join(w.to_bytes(4, "little") for w in words) + bytes(24)
        size = self.lib.LLVMDisasmInstruction(self.context, data, len(data), 0, self.buffer, 1024)
        text = self.buffer.value.decode(errors="replace").strip()
        if size == 0 or not text or text.startswith("."):
            return None
        return size, text


def place(fields, key):
    """The dwords' bits for `key` spread over `fields` (most significant first)."""
    words = [0, 0, 0]
    masks = [0, 0, 0]
    for word, lo, width in reversed(fields):
        words[word] |= (key & ((1 << width) - 1)) << lo
        masks[word] |= ((1 << width) - 1) << lo
        key >>= width
    return words, masks


def set_field(words, field, value):
    word, lo, width = field
    out = list(words)
    out[word] = out[word] & ~(((1 << width) - 1) << lo) | value << lo
    return out


def measure(llvm, fmt, variant, key):
    """The table answer for one key of one variant, or None when LLVM rejects every pattern."""
    name, mask, value, keys, lits, variants = fmt
    kw, km = place(keys, key)
    for base in bases(name):
        words = [base[0] & ~mask & ~km[0] | value | kw[0],
                 base[1] & ~km[1] | kw[1], base[2] & ~km[2] | kw[2]]
        if variant:
            words = set_field(words, *variants[variant - 1])
        elif any(matches(words, field, v) for field, v in variants):
            continue
        if any(get(words, lit) == 255 for lit in lits):
            continue
        got = llvm.decode(words)
        if not got:
            continue
        size, text = got
        mnemonic = text.split()[0]
        lit_mask = bad_mask = 0
        for i, lit in enumerate(lits):
            if variant and variants[variant - 1][0] == lit:
                continue
            other = llvm.decode(set_field(words, lit, 255))
            if other is None:
                bad_mask |= 1 << i
            elif other[0] == size + 4 and other[1].split()[0] == mnemonic:
                lit_mask |= 1 << i
        zero_mask = 0
        for i, field in enumerate(ZERO_FIELDS.get(name, [])):
            if variant and variants[variant - 1][0] == field:
                continue
            probes = [llvm.decode(set_field(words, field, v)) for v in ZERO_PROBES[field[2]]]
            if get(words, field) == 0 and all(p is None for p in probes):
                zero_mask |= 1 << i
        imm = 0
        if name == "SOPP":
            texts = [llvm.decode(set_field(words, f(0, 0, 16), v)) for v in (0, 0x1234, 0xFFF0)]
            if texts == [(size, f"{mnemonic} {v}") for v in (0, 4660, 65520)]:
                imm = 1
        return size, lit_mask, bad_mask, zero_mask, imm, mnemonic
    return None


def get(words, field):
    word, lo, width = field
    return words[word] >> lo & ((1 << width) - 1)


def matches(words, field, v):
    return get(words, field) == v


def fields_text(fields):
    return "+".join(f"{w}.{lo}.{width}" for w, lo, width in fields) or "-"


def table(target):
    llvm = Llvm(TARGETS[target])
    llvm.open(target)
    out = [f"# {target}: generated by scripts/gen_isa_tables.py from LLVM {TARGETS[target]}'s "
           "AMDGPU disassembler; do not edit\n"]
    formats = FORMATS[family(target)]
    index = 0
    for fmt in formats:
        name, mask, value, keys, lits, variants = fmt
        width = sum(w for _, _, w in keys)
        plain = [measure(llvm, fmt, 0, key) for key in range(1 << width)]
        if name == PAIR_HOST[family(target)]:
            for line, rows in pairs(llvm, fmt, plain):
                out.append(line)
                out.extend(row(index, 0, run) for run in rows)
                index += 1
        var = " ".join(f"{fields_text([fl])}.{v}" for fl, v in variants)
        zero = fields_text(ZERO_FIELDS.get(name, []))
        out.append(f"F {name} {mask:08x} {value:08x} {fields_text(keys)} {fields_text(lits)} "
                   f"{zero} {var}".rstrip() + "\n")
        for variant in range(len(variants) + 1):
            answers = plain if variant == 0 else (measure(llvm, fmt, variant, key)
                                                  for key in range(1 << width))
            out.extend(row(index, variant, run) for run in runs(answers))
        index += 1
    return "".join(out)


def runs(answers):
    """[first key, last key, answer] for each run of consecutive keys with one answer."""
    out = []
    run = None
    for key, got in enumerate(answers):
        if run and got == run[2]:
            run[1] = key
            continue
        if run and run[2]:
            out.append(run)
        run = [key, key, got]
    if run and run[2]:
        out.append(run)
    return out


def pairs(llvm, fmt, plain):
    """The two-part encodings whose first half is a key of `fmt` (an instruction LLVM decodes
    on its own) and whose second half, in dwords 2-3, is a key of `fmt` again: LLVM answers with
    one instruction of both halves' size (gfx950's v_mfma_scale_*: v_mfma_ld_scale_b32's
    encoding followed by an MFMA's). One `(F line, runs)` per first-half key that has any:
    the format's identifying bits span dwords 0-3 (the first half's key, the second half's
    format bits, and every bit whose flip loses the answer), its key is the second half's."""
    name, mask, value, keys, _, _ = fmt
    accepted = [key for key, got in enumerate(plain) if got and got[0] == 8]
    shifted = [(word + 2, lo, width) for word, lo, width in keys]
    out = []
    for first in accepted:
        kw, km = place(keys, first)
        found = None
        for base in PAIR_BASES:
            for second in accepted:
                sw, sm = place(shifted, second)
                words = [value | kw[0], base[0], value | base[1] | sw[2], base[2]]
                got = llvm.decode(words)
                if got and got[0] == 16:
                    found = words, sm[2]
                    break
            if found:
                break
        if not found:
            continue
        words, second_key_mask = found
        # Identifying bits: the two halves' format and key bits, and what a flip changes.
        masks = [mask | km[0], 0, mask, 0]
        answer = llvm.decode(words)[1].split()[0]
        for word in range(4):
            for bit in range(32):
                if word == 2 and second_key_mask >> bit & 1 or masks[word] >> bit & 1:
                    continue
                flipped = list(words)
                flipped[word] ^= 1 << bit
                got = isolated(llvm, flipped)
                if not got or got[0] != 16 or got[1].split()[0] != answer:
                    masks[word] |= 1 << bit
        ident = [words[w] & masks[w] for w in range(4)]
        lits = [(word + 2, lo, width) for word, lo, width in VOP3_LIT]
        pair_lits = [fl for fl in (VOP3_LIT + lits) if not any(
            masks[fl[0]] >> (fl[1] + i) & 1 for i in range(fl[2]))]
        answers = []
        for second in range(1 << sum(w for _, _, w in keys)):
            sw, _ = place(shifted, second)
            probe = [ident[0] | words[0] & ~masks[0], words[1], ident[2] | sw[2] | words[2]
                     & ~masks[2] & ~second_key_mask, words[3]]
            got = llvm.decode(probe)
            if not got or got[0] != 16:
                answers.append(None)
                continue
            mnemonic = got[1].split()[0]
            lit_mask = bad_mask = 0
            for i, lit in enumerate(pair_lits):
                # LLVM 22 crashes on a literal in v_mfma_scale_*: probed in a child process.
                other = isolated(llvm, set_field(probe, lit, 255))
                if other is None:
                    bad_mask |= 1 << i
                elif other[0] == 20 and other[1].split()[0] == mnemonic:
                    lit_mask |= 1 << i
            answers.append((16, lit_mask, bad_mask, 0, 0, mnemonic))
        text = ".".join(f"{m:08x}" for m in masks), ".".join(f"{v:08x}" for v in ident)
        line = (f"F {name}X2 {text[0]} {text[1]} {fields_text(shifted)} "
                f"{fields_text(pair_lits)} -\n")
        out.append((line, runs(answers)))
    return out


def isolated(llvm, words):
    """llvm.decode(words) in a child process: None also when LLVM crashes."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        got = llvm.decode(words)
        os.write(write, repr(got).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 4096):
        data += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return None
    return ast.literal_eval(data.decode())


def row(index, variant, run):
    lo, hi, (size, lit, bad, zero, imm, mnemonic) = run
    return f"R {index} {variant} {lo:x} {hi:x} {size} {lit} {bad} {zero} {imm} {mnemonic}\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    parser.add_argument("targets", nargs="*", default=list(TARGETS))
    args = parser.parse_args()
    stale = []
    files = {}
    bodies = {}
    aliases = []
    for target in args.targets:
        text = table(target)
        body = text.split("\n", 1)[1]
        if body in bodies:
            aliases.append(f"{target} {bodies[body]}\n")
            continue
        bodies[body] = target
        files[f"{target}.txt"] = text
        print(f"{target}: {text.count(chr(10))} lines", flush=True)
    files["aliases.txt"] = "".join(aliases)
    for name, text in files.items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("stale tables:", " ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

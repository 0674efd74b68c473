#!/usr/bin/env python3
"""Regenerates tests/data/mnemonics/<target>.txt: every mnemonic LLVM's AMDGPU disassembler prints for a
target, found by sweeping the opcode fields of every encoding format with fixed (zero) operands. Each
line is `mnemonic<TAB>encoding bytes<TAB>the first instruction text found with that mnemonic`.

usage: scripts/gen_mnemonics.py [--llvm-mc PATH] [--check] [TARGET ...]
  --check  compare with the committed lists instead of writing them (exit 1 when they differ)

Each candidate is one input line: a first dword whose high half walks all 65536 values (the format
prefix and opcode fields of every RDNA and gfx9 encoding live there), with a zero low half or bit 15
set (gfx11 MTBUF keeps an opcode bit there), followed by three dwords that 64- and 96-bit encodings
read as operands (zero, except for the memory formats below). SOP1 and VOP1 keep their opcode in bits
8-16 and gfx12 SMEM in bits 13-20, so for those prefixes the low half is swept too. A line the
decoder rejects adds nothing.
"""

import argparse
import pathlib
import subprocess
import sys

TARGETS = ["gfx1030", "gfx1100", "gfx1200", "gfx90a", "gfx942"]
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "mnemonics"


# Memory formats (by the top 6 bits) whose decoding depends on operand fields: FLAT/GLOBAL/SCRATCH
# need an address register that says "off" (gfx9 0x7F, gfx10 0x7D, gfx11 0x7C in the second dword,
# gfx12 0x7C in the first), images a channel mask, BVH images the field values of an assembled
# `image_bvh_intersect_ray` (gfx10 0x9F01, gfx11 0x8F80, gfx12 0x4010 and its operand dword).
MEMORY_PREFIXES = {0x37, 0x3B, 0x3C, 0x34, 0x39}
MEMORY_LOWS = [0x0000, 0x8000, 0x007C, 0x0F00, 0x0F7C, 0x8F7C, 0x9F01, 0x8F80, 0x4010]
MEMORY_SECOND = [0x00000000, 0x007C0000, 0x007D0000, 0x007F0000, 0x00010409, 0x11000804]


def candidates():
    for hi in range(1 << 16):
        lows = [0x0000, 0x8000]
        seconds = [0]
        if hi >> 8 in (0xBE, 0x7E, 0x7F) or 0xF4 <= hi >> 8 <= 0xF7:
            lows = [m << 8 for m in range(256)]
        if hi >> 10 in MEMORY_PREFIXES:
            lows, seconds = MEMORY_LOWS, MEMORY_SECOND
        for lo in lows:
            for second in seconds:
                words = [hi << 16 | lo, second, 0, 0]
                data = b"".join(w.to_bytes(4, "little") for w in words)
                yield " ".join(f"0x{b:02x}" for b in data)


def disassemble(llvm_mc, target, lines):
    """(text, encoding) of every instruction llvm-mc decodes from `lines` (one byte string each)."""
    run = subprocess.run(
        [llvm_mc, "--disassemble", "--show-encoding", "-triple=amdgcn", f"-mcpu={target}"],
        input="\n".join(lines) + "\n", capture_output=True, text=True, check=True,
    )
    for line in run.stdout.splitlines():
        text, _, encoding = line.partition("; encoding: ")
        text = text.strip()
        if text and not text.startswith(".") and encoding:
            yield text, encoding.strip().strip("[]").replace(",", " ")


def mnemonics(llvm_mc, target):
    """mnemonic -> (encoding, text) of the first instruction found with that mnemonic."""
    found = {}
    for text, encoding in disassemble(llvm_mc, target, candidates()):
        found.setdefault(text.split()[0], (encoding, text))
    return found


def render(found):
    return "".join(f"{m}\t{found[m][0]}\t{found[m][1]}\n" for m in sorted(found))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llvm-mc", default="/usr/lib/llvm-19/bin/llvm-mc")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("targets", nargs="*", default=TARGETS)
    args = parser.parse_args()
    stale = []
    for target in args.targets:
        listed = render(mnemonics(args.llvm_mc, target))
        path = OUT / f"{target}.txt"
        if args.check:
            if not path.exists() or path.read_text() != listed:
                stale.append(target)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(listed)
            print(f"{target}: {listed.count(chr(10))} mnemonics")
    if stale:
        print("stale mnemonic lists:", " ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

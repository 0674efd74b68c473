#!/usr/bin/env python3
"""Regenerates src/isa/builtin/tables/<table>.extra.txt: the opcodes of gfx11 and gfx12 that the
LLVM-measured tables (scripts/gen_isa_tables.py) lack, so that built-in disassembly can still
give their size and mnemonic when every back-end answers `.long` (tinygrad's discover-ops
kernels run every opcode of the ISA, with every operand field set).

usage: scripts/gen_isa_extra.py [--check] [--tinygrad DIR]
  --check     compare with the committed files instead of writing them (exit 1 when they differ)
  --tinygrad  the installed `tinygrad` package (default: found on sys.path; `pip install
              tinygrad==0.14.0`); nothing of it is imported or run

The fact source is tinygrad's AMD ISA description, itself generated from AMD's machine-readable
ISA XML: `runtime/autogen/amd/<rdna3|rdna4>/enum.py` (each encoding's opcode numbers and names)
and `ins.py` (each encoding's fixed identifying bits and opcode field). Both are read as text.
An encoding of tinygrad is matched to a format of the LLVM table by its identifying bits (mask
and value of dword 0); encodings that share a format and opcode field pool their opcodes, unless
two of them name one opcode differently (FLAT / GLOBAL / SCRATCH, told apart by more bits): such
a format gets no rows.

For every opcode that has no LLVM row for any key of the format's plain encoding, every key whose
opcode bits hold it gets an `X` row per variant: the mnemonic is tinygrad's (lower case), and
size, literal and invalid masks are the answer LLVM gives most often in that format and variant
(the encoding's width: the opcode's operands take the same fields). The rows have the `R`
layout of gen_isa_tables.py and refer to the formats of the LLVM table by index.
"""

import argparse
import collections
import importlib.util
import pathlib
import re
import sys

TABLES = pathlib.Path(__file__).resolve().parent.parent / "src" / "isa" / "builtin" / "tables"
FAMILY_DIR = {"gfx11": "rdna3", "gfx12": "rdna4"}
TINYGRAD_VERSION = "0.14.0"


def tinygrad_dir(given):
    if given:
        return pathlib.Path(given)
    spec = importlib.util.find_spec("tinygrad")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"tinygrad not found: pip install tinygrad=={TINYGRAD_VERSION} or pass --tinygrad")
    return pathlib.Path(spec.submodule_search_locations[0])


def enums(text):
    """{enum class: {opcode: NAME}}, the first name of each number (later lines are aliases)."""
    out = {}
    current = None
    for line in text.splitlines():
        start = re.match(r"class (\w+)\(ReprEnum\):", line)
        if start:
            current = out.setdefault(start.group(1), {})
            continue
        member = re.match(r"  (\w+) = (\d+)$", line)
        if member and current is not None:
            current.setdefault(int(member.group(2)), member.group(1))
        elif not line.startswith("  "):
            current = None
    return out


def encodings(text):
    """[(mask, value, (opcode lo, width), enum class)] of each encoding with an opcode field."""
    out = []
    for body in re.split(r"\nclass \w+\(Inst\):\n", text)[1:]:
        fixed = re.search(r"encoding = FixedBitField\((\d+), (\d+), 0b([01]+)\)", body)
        op = re.search(r"op = EnumBitField\((\d+), (\d+), (\w+)", body)
        if not fixed or not op:
            continue
        hi, lo = int(fixed.group(1)), int(fixed.group(2))
        mask = ((1 << (hi - lo + 1)) - 1) << lo
        value = int(fixed.group(3), 2) << lo
        op_hi, op_lo = int(op.group(1)), int(op.group(2))
        out.append((mask, value, (op_lo, op_hi - op_lo + 1), op.group(3)))
    return out


def parse_fields(text):
    return [] if text == "-" else [tuple(map(int, part.split("."))) for part in text.split("+")]


def read_table(path):
    """(family, formats) of an LLVM table: per format its dword-0 mask and value, whether it is a
    two-part encoding, its key fields and, per variant, its rows (first key, last key, (size,
    literal mask, invalid mask))."""
    formats = []
    lines = path.read_text().splitlines()
    target = lines[0].split()[1].rstrip(":")
    for line in lines:
        words = line.split()
        if words and words[0] == "F":
            variants = len(words) - 7
            formats.append({"mask": int(words[2].split(".")[0], 16),
                            "value": int(words[3].split(".")[0], 16),
                            "two_part": "." in words[2],
                            "key": parse_fields(words[4]),
                            "rows": [[] for _ in range(variants + 1)]})
        elif words and words[0] == "R":
            fmt, variant, first, last = int(words[1]), int(words[2]), int(words[3], 16), int(words[4], 16)
            formats[fmt]["rows"][variant].append((first, last, tuple(map(int, words[5:8]))))
    return target[:5], formats


def key_opcode(key, fields, opcode):
    """The opcode bits of dword 0 that key `key` of a format with key `fields` sets."""
    word0 = 0
    for word, lo, width in reversed(fields):
        if word == 0:
            word0 |= (key & ((1 << width) - 1)) << lo
        key >>= width
    lo, width = opcode
    return word0 >> lo & ((1 << width) - 1)


def residue(key, fields, opcode):
    """`key` without the bits that land in the opcode field of dword 0."""
    lo, width = opcode
    mask = shift = 0
    for word, field_lo, field_width in reversed(fields):
        for bit in range(field_width):
            if word == 0 and lo <= field_lo + bit < lo + width:
                mask |= 1 << (shift + bit)
        shift += field_width
    return key & ~mask


def extra_rows(formats, tinygrad):
    """The `X` lines for the opcodes tinygrad names and the LLVM table `formats` lacks."""
    out = []
    for index, fmt in enumerate(formats):
        if fmt["two_part"]:
            continue
        matching = [(opcode, enum) for mask, value, opcode, enum in tinygrad["encodings"]
                    if mask == fmt["mask"] and value == fmt["value"]]
        if not matching or len({opcode for opcode, _ in matching}) != 1:
            continue
        opcode_field = matching[0][0]
        names = {}
        clash = False
        for _, enum in matching:
            for number, name in tinygrad["enums"].get(enum, {}).items():
                clash |= names.setdefault(number, name) != name
        if clash:
            continue
        width = sum(w for _, _, w in fmt["key"])
        keys_of = collections.defaultdict(list)
        for key in range(1 << width):
            keys_of[key_opcode(key, fmt["key"], opcode_field)].append(key)
        known_keys = [key for first, last, _ in fmt["rows"][0] for key in range(first, last + 1)]
        known = {key_opcode(key, fmt["key"], opcode_field) for key in known_keys}
        # Key bits beside the opcode (cache policy, a wider key than tinygrad's opcode field)
        # only take the values LLVM decodes for some opcode.
        others = {residue(key, fmt["key"], opcode_field) for key in known_keys}
        for variant, rows in enumerate(fmt["rows"]):
            if not rows:
                continue
            common = collections.Counter(answer for _, _, answer in rows).most_common(1)[0][0]
            size, literal, invalid = common
            for number in sorted(set(names) - known):
                keys = [key for key in keys_of.get(number, [])
                        if residue(key, fmt["key"], opcode_field) in others]
                for first, last in runs(keys):
                    out.append(f"X {index} {variant} {first:x} {last:x} {size} {literal} {invalid} "
                               f"0 0 {names[number].lower()}\n")
    return out


def runs(keys):
    """[first, last] of each run of consecutive keys (sorted)."""
    out = []
    for key in keys:
        if out and out[-1][1] + 1 == key:
            out[-1][1] = key
        else:
            out.append([key, key])
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--tinygrad", default=None)
    args = parser.parse_args()
    root = tinygrad_dir(args.tinygrad) / "runtime" / "autogen" / "amd"
    stale = []
    for path in sorted(TABLES.glob("gfx*.txt")):
        if path.name.endswith(".extra.txt"):
            continue
        family, formats = read_table(path)
        if family not in FAMILY_DIR:
            continue
        isa = root / FAMILY_DIR[family]
        tinygrad = {"enums": enums((isa / "enum.py").read_text()),
                    "encodings": encodings((isa / "ins.py").read_text())}
        rows = extra_rows(formats, tinygrad)
        text = (f"# {path.stem}: generated by scripts/gen_isa_extra.py from tinygrad "
                f"{TINYGRAD_VERSION}'s {FAMILY_DIR[family]} opcode lists; do not edit\n"
                + "".join(rows))
        out = path.with_name(f"{path.stem}.extra.txt")
        print(f"{out.name}: {len(rows)} rows", flush=True)
        if args.check:
            if not out.exists() or out.read_text() != text:
                stale.append(out.name)
        else:
            out.write_text(text)
    if stale:
        print("stale tables:", " ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

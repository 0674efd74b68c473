#!/usr/bin/env python3
"""Runs one comparison with the reference decoder's outputs over the whole corpus and holds its
failing cases to the committed list tests/known_differences.txt: fails on a case that differs and
is not listed, and on a listed case that now matches (take it off the list). Every other case must
match exactly. A new corpus example is compared like every other one, with no list entry needed.

usage: known_differences.py CHECK --lib PATH [--shared DIR]

CHECK is one of
  real     ../shared/tools/golden_check.py (V1 and V2, one parse call per SE file)
  vnop     the same against golden_vnop/ (ISA text always "v_nop")
  single   golden_check.py --feed single (one parse call fed every SE file in order)
  damaged  ../shared/tools/damage_check.py (truncated and zeroed SE streams, V1 and V2)
  mode1    tests/mode1_golden.py (no ISA callback: the code objects are loaded and disassembled)

A list line is `CHECK CASE`, where CASE is the example (`gfx1100/profile_ops_run_0`), or for
`damaged` the example, SE file, damage and argument (`gfx950/x se2.att trunc 989`).
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "known_differences.txt")
CHECKS = ("real", "vnop", "single", "damaged", "mode1")


def command(check, lib, shared):
    tools = os.path.join(shared, "tools")
    corpus = ["--corpus", os.path.join(shared, "corpus")]
    golden = [sys.executable, os.path.join(tools, "golden_check.py"), "--lib", lib, "--show", "3"] + corpus
    return {
        "real": golden,
        "vnop": golden + ["--variant", "vnop"],
        "single": golden + ["--feed", "single"],
        "damaged": [sys.executable, os.path.join(tools, "damage_check.py"), "--lib", lib, "--show", "100000"] + corpus,
        "mode1": [sys.executable, os.path.join(HERE, "mode1_golden.py"), "--lib", lib, "--shared", shared],
    }[check]


def failing_cases(check, output):
    """The failing cases named by the tool's `FAIL ...` lines, each with its line."""
    width = 4 if check == "damaged" else 1
    cases = {}
    for line in output.splitlines():
        if line.startswith("FAIL "):
            words = line.split()[1 : 1 + width]
            words[-1] = re.sub(r"[:(].*$", "", words[-1])
            cases[" ".join(words)] = line
    return cases


def known_cases(check):
    known = set()
    with open(LIST) as f:
        for line in f:
            line = line.split("#")[0].split()
            if line and line[0] == check:
                known.add(" ".join(line[1:]))
    return known


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("check", choices=CHECKS)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shared", default=os.environ.get("RTD_SHARED", os.path.join(HERE, "..", "..", "shared")))
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.shared, "corpus")):
        print(f"{a.shared}/corpus is missing")
        return 1
    p = subprocess.run(command(a.check, os.path.abspath(a.lib), a.shared), capture_output=True, text=True)
    lines = p.stdout.strip().splitlines()
    if p.returncode not in (0, 1) or not lines or not re.fullmatch(r"\d+ passed, \d+ failed", lines[-1]):
        print(p.stdout[-5000:], p.stderr[-5000:])
        return 1
    passed, failed = map(int, re.findall(r"\d+", lines[-1]))
    if passed + failed == 0:
        print(f"{a.check}: no case was compared")
        return 1
    failing = failing_cases(a.check, p.stdout)
    known = known_cases(a.check)
    new = sorted(set(failing) - known)
    fixed = sorted(known - set(failing))
    for case in new:
        print("NEW DIFFERENCE", failing[case])
        at = p.stdout.index(failing[case]) + len(failing[case])
        for detail in p.stdout[at:].splitlines()[1:4]:
            if detail.startswith(" "):
                print("   ", detail.strip()[:400])
    for case in fixed:
        print(f"NOW MATCHES (take it off {os.path.basename(LIST)}): {a.check} {case}")
    print(f"{a.check}: {lines[-1]} ({len(known)} known differences)")
    return 1 if new or fixed else 0


if __name__ == "__main__":
    sys.exit(main())

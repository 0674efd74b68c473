#!/usr/bin/env python3
"""Runs ../shared/tools/damage_check.py and holds its failing cases to the committed list of known
differences (tests/damage_known_differences.txt): fails on a case that differs and is not listed,
and on a listed case that now passes (take it off the list). Every other case must match the
reference's output exactly, through V1 and V2.

usage: damage_known.py --lib PATH [--shared DIR]
"""
import argparse, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    a = ap.parse_args()
    tool = os.path.join(a.shared, "tools", "damage_check.py")
    if not os.path.isfile(tool):
        print(f"{tool} is missing"); return 1
    p = subprocess.run([sys.executable, tool, "--lib", a.lib, "--show", "100000"], capture_output=True, text=True)
    lines = p.stdout.strip().splitlines()
    if not lines or not re.fullmatch(r"\d+ passed, \d+ failed", lines[-1]):
        print(p.stdout, p.stderr); return 1
    failing = {" ".join(l.split()[1:5]).rstrip(":"): l for l in lines if l.startswith("FAIL ")}
    known = set()
    with open(os.path.join(HERE, "damage_known_differences.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line: known.add(line)
    new = sorted(set(failing) - known)
    fixed = sorted(known - set(failing))
    for case in new: print("NEW DIFFERENCE", failing[case])
    for case in fixed: print("NOW MATCHES (remove it from damage_known_differences.txt):", case)
    print(f"damage_check: {lines[-1]} ({len(known)} known differences)")
    return 1 if new or fixed or p.returncode not in (0, 1) else 0


if __name__ == "__main__":
    sys.exit(main())

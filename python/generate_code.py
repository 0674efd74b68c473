#!/usr/bin/env python3
"""Write code.json (and source snapshots) for GPU code objects into the current directory.

usage: generate_code.py [code_object ...]
Without arguments every .co/.hsaco/.o/.out file of the current directory is used.
Exit status: 0 on success, 1 when there is no input or code generation fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rocprof_trace_decoder.code_object_paths import code_objects_from_paths  # noqa: E402
from rocprof_trace_decoder.codegen import generate_code_artifacts, llvm_objdump  # noqa: E402
from rocprof_trace_decoder.rcv import write_code_json, write_source_snapshots  # noqa: E402

CODE_OBJECT_SUFFIXES = {".co", ".hsaco", ".o", ".out"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate code.json from GPU code objects.")
    parser.add_argument("code_objects", nargs="*", help="code object files (default: scan the current directory)")
    args = parser.parse_args(argv)
    cwd = Path.cwd()
    paths = [Path(p) for p in args.code_objects] or sorted(
        p for p in cwd.iterdir() if p.is_file() and p.suffix.lower() in CODE_OBJECT_SUFFIXES
    )
    if not paths:
        print("No code object given and no .hsaco/.out/.co/.o found in current directory.", file=sys.stderr)
        return 1
    try:
        try:
            print(f"Using llvm-objdump: {llvm_objdump()}")
        except FileNotFoundError:
            print("No llvm-objdump found: using the decoder library's built-in disassembly (mnemonics only)")
        artifacts = generate_code_artifacts(code_objects_from_paths(paths))
        write_code_json(cwd, artifacts.code_index)
        print(f"wrote {cwd / 'code.json'}")
        if write_source_snapshots(artifacts.source_paths, cwd):
            print(f"wrote {cwd / 'snapshots.json'}")
        else:
            print("no source files snapshotted")
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

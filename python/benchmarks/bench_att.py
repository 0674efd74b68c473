#!/usr/bin/env python3
"""Time the Python pipeline on one corpus example: decode + record conversion per SE, then the
complete viewer output through generate_att_outputs with 1 and N worker processes.

usage: bench_att.py [--lib PATH] [--corpus DIR] [--jobs N] EXAMPLE   (e.g. gfx950/aiter_skinny_M128_att_hack0)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import CORPUS, DEFAULT_LIB, CorpusIsa  # noqa: E402

from rocprof_trace_decoder import AttTrace, CodeIndex, Decoder, generate_att_outputs  # noqa: E402
from rocprof_trace_decoder.code_index import CodeEntry  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("example")
    parser.add_argument("--lib", default=os.environ.get("ROCPROF_TRACE_DECODER_LIB", str(DEFAULT_LIB)))
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    example = Path(args.corpus) / args.example
    isa = CorpusIsa(example)
    files = sorted(example.glob("se*.att"), key=lambda p: int(p.stem[2:]))
    total_bytes = sum(p.stat().st_size for p in files)

    instructions = 0
    start = time.perf_counter()
    with Decoder(args.lib) as decoder:
        for path in files:
            records = decoder.parse_file(path, isa=isa)
            instructions += sum(len(w.instructions) for w in records.waves)
    decode_seconds = time.perf_counter() - start
    print(f"{args.example}: {len(files)} SE files, {total_bytes / 1e6:.2f} MB, {instructions} instructions")
    print(f"  Decoder.parse + conversion: {decode_seconds:.3f} s, {total_bytes / 1e6 / decode_seconds:.1f} MB/s, "
          f"{instructions / decode_seconds / 1e6:.2f} M instructions/s")  # fmt: skip

    entries = [CodeEntry(pc, text, line) for line, (pc, (text, _)) in enumerate(sorted(isa.answers.items()), 1)]
    document = {"code": [[e.inst, 0, e.line_number, "", e.pc.code_object_id, e.pc.address, 0, 0, 0, 0]
                         for e in entries]}  # fmt: skip
    index = CodeIndex.from_document(document)
    traces = [AttTrace(path, int(path.stem[2:]), 1) for path in files]
    for jobs in sorted({1, args.jobs}):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            generate_att_outputs(traces, code_index=index, output_dir=out, lib_path=args.lib, jobs=jobs)
            seconds = time.perf_counter() - start
        print(f"  generate_att_outputs, {jobs} job(s): {seconds:.3f} s, {total_bytes / 1e6 / seconds:.1f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

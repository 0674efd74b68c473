#!/usr/bin/env python3
"""Upstream-compatible entry point: runs the `rocprof-att` command from a checkout, without
installing the package (the code lives in rocprof_trace_decoder/cli.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rocprof_trace_decoder.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

"""`python3 -m rocprof_trace_decoder` runs the rocprof-att command (for installs without console
scripts, such as the CMake one)."""

import sys

from .cli import main

sys.exit(main(prog="python3 -m rocprof_trace_decoder"))

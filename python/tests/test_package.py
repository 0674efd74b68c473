"""The package root: a light import (no tools, no extras), every exported name resolving, and one
library shared by the ATT decoder and PMA."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PYTHON_DIR

import rocprof_trace_decoder as package
from rocprof_trace_decoder import pma
from rocprof_trace_decoder.bindings import Decoder, DecoderLoadError

# Modules `import rocprof_trace_decoder` must leave alone: the tools and the heavy extras.
NOT_IMPORTED = ("att", "rcv", "codegen", "perfetto_export", "analysis", "cli", "pma")


def run_python(code: str, env: dict[str, str] | None = None) -> str:
    """Runs `code` in a fresh interpreter that imports the package from this checkout."""
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(PYTHON_DIR)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout


def test_import_leaves_the_tools_and_extras_unimported():
    loaded = json.loads(run_python("import json, sys, rocprof_trace_decoder; print(json.dumps(sorted(sys.modules)))"))
    assert "rocprof_trace_decoder.bindings" in loaded
    assert [name for name in NOT_IMPORTED if f"rocprof_trace_decoder.{name}" in loaded] == []


def test_every_exported_name_resolves():
    names = json.loads(run_python("import json, rocprof_trace_decoder as p; print(json.dumps(p.__all__))"))
    assert names == package.__all__
    for name in names:
        assert getattr(package, name) is not None, name
    assert set(names) <= set(dir(package))
    assert package.PmaDecoder is pma.Decoder
    assert package.att.generate_att_outputs is package.generate_att_outputs
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


def test_decoder_and_pma_load_the_same_library(decoder_lib, tmp_path):
    """Found by the search (no ROCPROF_TRACE_DECODER_LIB), both report one path, loaded once."""
    (tmp_path / "librocprof-trace-decoder.so").symlink_to(Path(decoder_lib).resolve())
    env = {k: v for k, v in os.environ.items() if k != "ROCPROF_TRACE_DECODER_LIB"}
    env["LD_LIBRARY_PATH"] = str(tmp_path)
    code = """
import json
from rocprof_trace_decoder import Decoder, PmaDecoder, _library
with Decoder() as decoder, PmaDecoder() as pma_decoder:
    print(json.dumps([decoder.lib_path, pma_decoder.lib_path, len(_library._loaded)]))
"""
    decoder_path, pma_path, loaded = json.loads(run_python(code, env))
    assert decoder_path == pma_path
    bundled = sorted((PYTHON_DIR / "rocprof_trace_decoder").glob("librocprof-trace-decoder*.so"))
    assert decoder_path == str(bundled[0] if bundled else tmp_path / "librocprof-trace-decoder.so")
    assert loaded == 1


def test_a_library_that_does_not_load_is_named_in_the_error(tmp_path):
    missing = tmp_path / "librocprof-trace-decoder.so"
    for make in (lambda: Decoder(missing), lambda: pma.Decoder(lib_path=missing)):
        with pytest.raises(DecoderLoadError, match=re.escape(str(missing))):
            make()

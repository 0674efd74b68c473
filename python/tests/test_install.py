"""``pip install ./python`` installs the whole API, and the installed package works from any
directory with the library named by ROCPROF_TRACE_DECODER_LIB."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import PYTHON_DIR

from rocprof_trace_decoder import __all__ as EXPORTED_NAMES
from rocprof_trace_decoder import __version__

PACKAGE = "rocprof_trace_decoder"

USE_INSTALLED_PACKAGE = """
import json, rocprof_trace_decoder as package
from rocprof_trace_decoder import *
with package.Decoder() as decoder:
    print(json.dumps({"file": package.__file__, "version": package.__version__, "lib": decoder.lib_path,
                      "success": decoder.status_string(DecoderStatus.SUCCESS),
                      "exported": sorted(name for name in package.__all__ if name in globals())}))
"""


def pip_install(source: Path, target: Path) -> subprocess.CompletedProcess:
    # Without the wheel package only an isolated build (which fetches its build requirements) works.
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("wheel") else []
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), *isolation]
    return subprocess.run([*command, str(source)], capture_output=True, text=True, timeout=600)


def test_installed_package_works_from_another_directory(decoder_lib, tmp_path):
    # A clean copy: setuptools would otherwise package whatever a previous build left in python/build.
    source = tmp_path / "python"
    shutil.copytree(PYTHON_DIR, source, ignore=shutil.ignore_patterns("build", "tests", "*.egg-info", "__pycache__"))
    site = tmp_path / "site"
    installed = pip_install(source, site)
    assert installed.returncode == 0, installed.stderr

    # Only the API is installed (the tools run from the source tree), and all of it.
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == [PACKAGE]
    source_modules = sorted(p.relative_to(PYTHON_DIR).as_posix() for p in (PYTHON_DIR / PACKAGE).rglob("*.py"))
    assert sorted(p.relative_to(site).as_posix() for p in (site / PACKAGE).rglob("*.py")) == source_modules

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(PYTHONPATH=str(site), ROCPROF_TRACE_DECODER_LIB=decoder_lib)
    result = subprocess.run([sys.executable, "-c", USE_INSTALLED_PACKAGE], cwd=elsewhere, env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert Path(report["file"]).is_relative_to(site)
    assert report["lib"] == decoder_lib
    assert report["success"]
    assert report["version"] == __version__
    assert report["exported"] == sorted(EXPORTED_NAMES)

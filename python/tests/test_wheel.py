"""`python -m pip wheel ./python` gives a platform wheel that carries the decoder library: a fresh
venv with only that wheel installed decodes a corpus example with no environment variable set.

The wheel is built from a clean copy of the repository's files (what git tracks, plus files not
yet added), so nothing a previous build left in python/build can slip into it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO_ROOT, RCV_EXAMPLES, compare_viewer_output, prepare_rcv_input
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from rocprof_trace_decoder import __all__ as EXPORTED_NAMES
from rocprof_trace_decoder import __version__

SONAME = "librocprof-trace-decoder.so.0.3"
# Variables that would point the package at a library other than the bundled one.
LIBRARY_VARIABLES = ("ROCPROF_TRACE_DECODER_LIB", "LD_LIBRARY_PATH", "ROCM_PATH", "ROCM_HOME", "PYTHONPATH")

USE_INSTALLED_PACKAGE = """
import json, rocprof_trace_decoder as package
from rocprof_trace_decoder import *
with package.Decoder() as decoder:
    print(json.dumps({"file": package.__file__, "version": package.__version__, "lib": decoder.lib_path,
                      "success": decoder.status_string(DecoderStatus.SUCCESS),
                      "exported": sorted(name for name in package.__all__ if name in globals())}))
"""


def clean_copy(destination: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def pip_wheel(source: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    # Without the build requirements installed only an isolated build (which fetches them) works.
    have_backend = all(importlib.util.find_spec(name) for name in ("setuptools_rust", "wheel"))
    isolation = ["--no-build-isolation"] if have_backend else []
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-w", str(out), str(source / "python")]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LIBRARY_VARIABLES}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = clean_copy(work / "source")
    # Reuse the repository's compiled dependencies; the copy's own crate is compiled again.
    env = clean_env(CARGO_TARGET_DIR=str(REPO_ROOT / "target"))
    built = pip_wheel(source, work / "dist", env)
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = (work / "dist").glob("*.whl")
    return path


def test_wheel_is_a_platform_wheel_carrying_the_library(wheel, tmp_path):
    assert wheel.name.startswith(f"rocprof_trace_decoder-{__version__}-")
    assert not wheel.name.endswith("-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (library,) = [n for n in names if n.startswith("rocprof_trace_decoder/librocprof-trace-decoder")]
        archive.extract(library, tmp_path)
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    with (tmp_path / library).open("rb") as handle:
        dynamic = next(s for s in ELFFile(handle).iter_sections() if isinstance(s, DynamicSection))
        sonames = [tag.soname for tag in dynamic.iter_tags() if tag.entry.d_tag == "DT_SONAME"]
    assert sonames == [SONAME]
    assert "rocprof-att = rocprof_trace_decoder.cli:main" in entry_points


def test_fresh_venv_with_only_the_wheel_decodes_a_corpus_example(wheel, corpus, tmp_path):
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    env = clean_env()
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", str(wheel)],
                               capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert installed.returncode == 0, installed.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    used = subprocess.run([str(python), "-c", USE_INSTALLED_PACKAGE], cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert used.returncode == 0, used.stderr
    report = json.loads(used.stdout)
    package_dir = Path(report["file"]).parent
    assert package_dir.is_relative_to(environment)
    assert Path(report["lib"]).parent == package_dir and Path(report["lib"]).name.startswith("librocprof-trace-decoder")
    assert report["success"] and report["version"] == __version__
    assert report["exported"] == sorted(EXPORTED_NAMES)

    example = RCV_EXAMPLES[0]
    inputs = prepare_rcv_input(example, tmp_path / "capture")
    tool = environment / "bin" / "rocprof-att"
    result = subprocess.run([str(tool), "--base-name", "att", str(inputs)], cwd=elsewhere, env=env,
                            capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(inputs / "ui_output_att1")]
    assert compare_viewer_output(inputs, corpus / "rcv_reference" / example, only_v016_content=True) == []

    help_text = subprocess.run([str(tool), "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert help_text.returncode == 0 and help_text.stdout.startswith("usage: rocprof-att ")


def test_source_build_without_rust_names_what_to_install(tmp_path):
    source = clean_copy(tmp_path / "source")
    cargo_dirs = {str(Path(p).parent) for p in (shutil.which("cargo"), shutil.which("rustc")) if p}
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if d not in cargo_dirs)
    env = clean_env(PATH=path)
    env.pop("CARGO", None)
    env.pop("RUSTC", None)
    assert shutil.which("cargo", path=path) is None and shutil.which("rustc", path=path) is None
    built = pip_wheel(source, tmp_path / "dist", env)
    assert built.returncode != 0
    output = built.stdout + built.stderr
    assert "Rust compiler" in output and "rustup" in output, output[-3000:]
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())

"""Finding and loading librocprof-trace-decoder, shared by the decoder bindings and PMA so that
both always use the same library file.

Order: an explicit path argument, then ``$ROCPROF_TRACE_DECODER_LIB`` (either is the only
candidate, used verbatim: an explicit choice that fails is an error, not a reason to pick
another library), then the copy bundled in the package, then the files found in each
``LD_LIBRARY_PATH`` entry, ``$ROCM_HOME/lib``, ``$ROCM_PATH/lib``, TheRock wheel library
directories and ``/opt/rocm/lib``, then the platform loader by name. The first candidate that
loads wins; each path is loaded once per process.
"""

from __future__ import annotations

import ctypes
import glob
import importlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import NamedTuple

from ._version import __version__

LIBRARY_ENV = "ROCPROF_TRACE_DECODER_LIB"
LIBRARY_NAME = "librocprof-trace-decoder.so"
# The SONAME: what a runtime-only install (no development symlink) has.
_SONAME = LIBRARY_NAME + ".{}.{}".format(*__version__.split(".")[:2])

Signatures = dict[str, tuple[list, object]]


class DecoderLoadError(OSError):
    """The decoder library could not be loaded or lacks a required symbol."""


class Library(NamedTuple):
    """A loaded library and the path (or loader name) it was loaded from."""

    path: str
    cdll: ctypes.CDLL

    def functions(self, prefix: str, signatures: Signatures) -> dict[str, ctypes._CFuncPtr]:
        """The functions ``prefix + name`` typed as ``signatures`` gives, keyed by ``name``."""
        functions = {}
        for name, (argtypes, restype) in signatures.items():
            try:
                function = getattr(self.cdll, prefix + name)
            except AttributeError as exc:
                raise DecoderLoadError(f"{self.path} does not export {prefix + name}") from exc
            function.argtypes = argtypes
            function.restype = restype
            functions[name] = function
        return functions


_loaded: dict[str, ctypes.CDLL] = {}
_loading = threading.Lock()


def load(lib_path: str | os.PathLike[str] | None = None) -> Library:
    """The first candidate that loads; the error lists every candidate tried and why it failed."""
    failures = []
    for candidate in candidates(lib_path):
        try:
            return Library(candidate, _open(candidate))
        except OSError as exc:
            failures.append(str(exc) if candidate in str(exc) else f"{candidate}: {exc}")
    message = "cannot load the rocprof-trace-decoder library; tried:\n  " + "\n  ".join(failures)
    if not lib_path and not os.environ.get(LIBRARY_ENV):
        searched = ", ".join(str(root) for root in [Path(__file__).parent, *_search_roots()])
        message += f"\nsearched for library files in {searched}; set {LIBRARY_ENV} to choose one"
    raise DecoderLoadError(message)


def _open(path: str) -> ctypes.CDLL:
    with _loading:
        if path not in _loaded:
            _loaded[path] = ctypes.CDLL(path)
        return _loaded[path]


def candidates(lib_path: str | os.PathLike[str] | None = None) -> list[str]:
    """The paths ``load`` tries, in order."""
    if lib_path:
        return [str(lib_path)]
    if os.environ.get(LIBRARY_ENV):
        return [os.environ[LIBRARY_ENV]]
    found = sorted(str(path) for path in Path(__file__).parent.glob("librocprof-trace-decoder*.so"))
    names = [LIBRARY_NAME, "librocprof-trace-decoder.dylib", _SONAME]
    for root in _search_roots():
        found += [str(root / name) for name in names if (root / name).exists()]
        found += [path for path in sorted(glob.glob(str(root / f"{LIBRARY_NAME}.*")), reverse=True)
                  if os.path.isfile(path)]  # fmt: skip
    found += [LIBRARY_NAME, _SONAME]
    return list(dict.fromkeys(found))


def _search_roots() -> list[Path]:
    roots = [Path(p).expanduser() for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    for variable in ("ROCM_HOME", "ROCM_PATH"):
        if os.environ.get(variable):
            roots.append(Path(os.environ[variable]) / "lib")
    roots += _therock_library_roots()
    roots.append(Path("/opt/rocm/lib"))
    return list(dict.fromkeys(roots))


def _therock_library_roots() -> list[Path]:
    roots: list[Path] = []
    for dist_info in ("rocm_sdk_core._dist_info", "rocm_profiler._dist_info", "rocm_sdk._dist_info"):
        try:
            module = importlib.import_module(dist_info)
            packages = module.ALL_PACKAGES
        except Exception:
            continue
        for kind in ("core", "devel", "profiler"):
            entry = packages.get(kind) if hasattr(packages, "get") else None
            if entry is None or getattr(entry, "is_target_specific", False):
                continue
            try:
                spec = importlib.util.find_spec(entry.get_py_package_name())
            except Exception:
                continue
            if spec is not None and spec.origin:
                roots.append(Path(spec.origin).parent)
    for package in ("_rocm_sdk_core", "_rocm_sdk_devel", "_rocm_profiler"):
        try:
            spec = importlib.util.find_spec(package)
        except Exception:
            continue
        if spec is not None and spec.origin:
            roots.append(Path(spec.origin).parent)
    return [root / "lib" for root in roots]

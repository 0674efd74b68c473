"""Python API of librocprof-trace-decoder: ctypes bindings, record model, viewer output.

The decoder, the records and the code index come with the import; everything else (ATT output
generation, code generation, hidden-latency analysis, PMA) is imported on first use (PEP 562), so
``import rocprof_trace_decoder`` does not pull in the tools, their process pools or the extras.
"""

from importlib import import_module as _import_module

from ._version import __version__
from .bindings import Decoder, DecoderError, IsaProvider
from .code_index import CodeEntry, CodeIndex
from .records import *  # noqa: F403
from .records import __all__ as _record_names

# Re-exported name -> (module, name there).
_LAZY = {
    "AttTrace": ("att", "AttTrace"),
    "generate_att_outputs": ("att", "generate_att_outputs"),
    "CodeArtifacts": ("codegen", "CodeArtifacts"),
    "CodeObject": ("codegen", "CodeObject"),
    "generate_code_artifacts": ("codegen", "generate_code_artifacts"),
    "generate_code_index": ("codegen", "generate_code_index"),
    "HiddenLatency": ("analysis", "HiddenLatency"),
    "HiddenLatencyResult": ("analysis", "HiddenLatencyResult"),
    "analyze_hidden_latency": ("analysis", "analyze_hidden_latency"),
    # Extra (not upstream): NVIDIA PMA PC sampling, named apart from the ATT Decoder.
    "PmaDecoder": ("pma", "Decoder"),
    "PmaError": ("pma", "PmaError"),
}

# Submodules reachable as attributes of the package, as they were when the root imported them.
_SUBMODULES = {"analysis", "att", "cli", "code_object_paths", "codegen", "markers", "perfetto_export", "pma", "rcv"}

__all__ = sorted(["CodeEntry", "CodeIndex", "Decoder", "DecoderError", "IsaProvider", "__version__", *_LAZY,
                  *_record_names])  # fmt: skip


def __getattr__(name: str):
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(_import_module(f".{module}", __name__), attribute)
    elif name in _SUBMODULES:
        value = _import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})

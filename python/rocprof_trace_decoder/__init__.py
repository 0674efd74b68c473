"""Python API of librocprof-trace-decoder: ctypes bindings, record model, viewer output."""

from ._version import __version__
from .analysis import HiddenLatency, HiddenLatencyResult, analyze_hidden_latency
from .att import AttTrace, generate_att_outputs
from .bindings import Decoder, DecoderError, IsaProvider
from .code_index import CodeEntry, CodeIndex
from .codegen import CodeArtifacts, CodeObject, generate_code_artifacts, generate_code_index
from .records import *  # noqa: F403
from .records import __all__ as _record_names

__all__ = [
    "AttTrace",
    "CodeArtifacts",
    "CodeEntry",
    "CodeIndex",
    "CodeObject",
    "Decoder",
    "DecoderError",
    "HiddenLatency",
    "HiddenLatencyResult",
    "IsaProvider",
    "__version__",
    "analyze_hidden_latency",
    "generate_att_outputs",
    "generate_code_artifacts",
    "generate_code_index",
    *_record_names,
]

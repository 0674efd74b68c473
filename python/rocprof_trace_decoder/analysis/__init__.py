"""Analyses over decoded records.

An extra beyond upstream's module table (newer upstream has ``analysis.hidden_latency`` too);
the package root re-exports it lazily.
"""

from .hidden_latency import HiddenLatency, HiddenLatencyResult, analyze_hidden_latency

__all__ = ["HiddenLatency", "HiddenLatencyResult", "analyze_hidden_latency"]

"""Analyses over decoded records."""

from .hidden_latency import HiddenLatency, HiddenLatencyResult, analyze_hidden_latency

__all__ = ["HiddenLatency", "HiddenLatencyResult", "analyze_hidden_latency"]

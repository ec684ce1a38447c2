"""Benchmarks: selection."""

"""Benchmarks: speed."""

"""Benchmarks: validity."""

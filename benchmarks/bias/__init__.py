"""Benchmarks: bias."""

"""Benchmarks: reliability."""

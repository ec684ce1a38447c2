"""Benchmarks: people."""

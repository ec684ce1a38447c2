"""Benchmarks: leaderboards."""

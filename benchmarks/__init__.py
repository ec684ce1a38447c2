"""The evidence: one script per measurement, grouped by the question it answers (see benchmarks/README.md)."""

"""Active-learning orchestrator for LLM judges."""

__version__ = "0.1.0"

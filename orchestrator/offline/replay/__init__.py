"""Judgment logs and what is done with them offline: ``replay`` (entry: :mod:`.replay`) through the
engine's own code path, its settings, report and people's rankings; grouping a log; ``record`` (asking
judges into a log) and ``simulate`` (synthetic data and logs)."""

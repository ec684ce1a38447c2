"""Candidates that are models: their answers generated the first time a planned request needs one.

- :mod:`.settings` — a ``[candidates.NAME]`` table resolved to what a call sends;
- :mod:`.generators` — who writes answers (litellm, a file of recorded answers);
- :mod:`.pipeline` — answers on demand inside the run's dispatch, committed before any judge sees them;
- :mod:`.cache` — answers kept across runs in the judgment cache's file.
"""

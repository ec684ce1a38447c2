"""Reading a run file: ``rank`` and ``status`` (entry: :mod:`.results`), the ``[compare]`` decision,
``export``."""

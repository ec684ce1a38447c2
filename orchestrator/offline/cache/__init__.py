"""The judgment cache's commands: ``cache stats``/``prune`` (entry: :mod:`.admin`) and ``cache import``."""

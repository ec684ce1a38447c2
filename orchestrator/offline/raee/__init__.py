"""Reference-anchored leaderboards read from a run or a log: ``fit raee`` (entry: :mod:`.fit`), people's
win rates beside it, length and self-preference control, boards as the rows of a reference campaign's
ranking and placements of newcomers on a board."""

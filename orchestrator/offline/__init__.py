"""Reading runs and judgment logs offline, by concern:

- ``runs/``: a run file read back — ``rank``, ``status``, the ``[compare]`` decision, ``export``;
- ``raee/``: reference-anchored leaderboards — ``fit raee``, length and self-preference control, boards;
- ``simplex/``: the Bayesian simplex fit of absolute judgments — ``fit simplex``, its text and plots;
- ``replay/``: judgment logs — ``replay`` through the engine's code path, ``record``, ``simulate``;
- ``judges/``: how far the judges can be trusted — panel lines, information, calibration, against people;
- ``cache/``: the judgment cache's commands;
- ``plotting``: the one matplotlib setup the offline parts share.

(A package of its own so that the public functions ``orchestrator.replay`` and
``orchestrator.fit_simplex`` are not shadowed by modules of the same name.)
"""

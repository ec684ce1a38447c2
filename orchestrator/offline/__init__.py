"""Reading runs and judgment logs offline: replaying selection strategies, the simplex fit.

(A package of its own so that the public functions ``orchestrator.replay`` and
``orchestrator.fit_simplex`` are not shadowed by modules of the same name.)
"""

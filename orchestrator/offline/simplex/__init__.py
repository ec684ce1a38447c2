"""The Bayesian simplex fit of absolute judgments: ``fit simplex`` (entry: :mod:`.fit`), its text and
plots."""

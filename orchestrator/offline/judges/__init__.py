"""How far the judges can be trusted: the judge panel lines of ``rank`` (:mod:`.panel`), whether a judge
carries information, calibration (``calibrate``), judges against people (``judges``, entry:
:mod:`.board`) and the human labels as data."""

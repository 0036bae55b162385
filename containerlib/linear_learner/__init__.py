"""The Linear Learner model as it crosses containers, in the service's own formats:

- :mod:`containerlib.linear_learner.model`: reads ``model.tar.gz`` (``model_algo-1``: a zip of the MXNet graph,
  NDArray params and JSON members) and scores it with numpy, as the service does; Evaluate, batch transform and
  serving use it.
- :mod:`containerlib.linear_learner.writer`: writes the same bytes the service writes (training).
- :mod:`containerlib.linear_learner.responses`: a record's response object per predictor type, built and read back.

Container-safe (Python 3.9, numpy and the standard library). This file imports nothing, so a job loads only the
modules it uses.
"""

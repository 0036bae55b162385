"""``llpipe serve``: a registered model version's inference pipeline (featurizer, Linear Learner, labels) answering
over HTTP as a SageMaker endpoint does, the three containers' code run in-process.

Modules: ``model`` (the version's containers loaded from the local S3: ``ServedModel``), ``capture`` (data capture
in SageMaker's format), ``app`` (the Starlette application: the container protocol and the runtime path),
``server`` (``LocalServer``: uvicorn on a thread, started and stopped from Python, or run until a signal).
"""

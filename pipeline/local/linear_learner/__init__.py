"""The local Linear Learner: a numpy re-implementation of SageMaker's built-in algorithm for the local backend.

Modules, in the order data flows through them:
``hyperparameters`` (validation and ``auto`` resolution), ``data`` (RecordIO-protobuf / CSV channels),
``trainer`` (scaler pass, parallel models, optimisers, early stopping, selection, calibration) with ``losses`` and
``metrics``, ``collective`` (gradient aggregation between instances), ``artifact`` (model.tar.gz in MXNet format),
``inference`` (batch transform), ``train`` (one instance, SageMaker's container contract), ``launcher`` (the Python
API: ``train`` and ``transform``) and ``cli`` (``llpipe linear-learner``).
"""

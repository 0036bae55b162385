"""The local Linear Learner: a numpy re-implementation of SageMaker's built-in algorithm for the local backend.

Modules, in the order data flows through them:
``hyperparameters`` (validation and ``auto`` resolution), ``data`` (RecordIO-protobuf / CSV channels),
``trainer`` (scaler pass, parallel models, optimisers, early stopping, selection, calibration) with ``losses`` and
``metrics``, ``collective`` (gradient aggregation between instances), ``artifact`` (writes model.tar.gz in the
service's layout; ``evaluation.linear_learner_model`` reads and scores it), ``inference`` (batch transform),
``train`` (one instance, SageMaker's container contract), ``launcher`` (the Python API: ``train`` and
``transform``) and ``cli`` (``llpipe linear-learner``).
"""

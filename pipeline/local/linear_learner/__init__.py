"""The local Linear Learner: a numpy re-implementation of SageMaker's built-in algorithm for the local backend.

Modules, in the order data flows through them:
``hyperparameters`` (validation and ``auto`` resolution), ``data`` (RecordIO-protobuf / CSV channels),
``trainer`` (scaler pass, parallel models, optimisers, early stopping, selection, calibration) with ``losses`` and
``metrics``, ``collective`` (gradient aggregation between instances), ``artifact`` (model.tar.gz in MXNet format),
``inference`` (batch transform), ``train`` (the entry point of one instance: SageMaker's container contract),
``launcher`` (the training job: ``launcher.train`` starts one ``train`` process per instance; and ``transform``).
The command ``llpipe linear-learner`` is ``pipeline/cli/linear_learner.py``. The package imports only
``pipeline.names``, ``pipeline.errors``, ``pipeline.files`` and ``pipeline.sharding`` from outside itself.
"""

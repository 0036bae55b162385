"""The local Linear Learner: a numpy re-implementation of SageMaker's built-in algorithm for the local backend.

Modules, in the order data flows through them:
``hyperparameters`` (validation and ``auto`` resolution), ``data`` (RecordIO-protobuf / CSV channels),
``trainer`` (scaler pass, parallel models, optimisers, early stopping, selection, calibration) with ``losses`` and
``metrics``, ``collective`` (gradient aggregation between instances), ``artifact`` (writes model.tar.gz through
``containerlib.linear_learner.writer``; ``containerlib.linear_learner.model`` reads and scores it), ``inference``
(batch transform), ``train`` (the entry point of one instance: SageMaker's container contract), ``launcher``
(the training job: ``launcher.train`` starts one ``train`` process per instance; and ``transform``). The command
``llpipe linear-learner`` is ``pipeline/cli/linear_learner.py``. From outside itself the package imports only the
shared vocabulary (``pipeline.core``: names, errors, files, sharding, processes) and container code (the codec, the
model reader); never the runner.
"""

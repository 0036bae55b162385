"""The container library: what the processing jobs (``preprocessing/``, ``evaluation/``) share, shipped in their
code bundles and used by ``pipeline`` outside a container too.

- :mod:`containerlib.names`: names the jobs and the pipeline share (predictor types, suffixes, report keys...)
- :mod:`containerlib.errors`: ``InputError``, bad input a job reports in one line and exit status 1
- :mod:`containerlib.exit_message`: SageMaker's exit-message file; :mod:`containerlib.hosts`: resourceconfig.json
- :mod:`containerlib.tables`: reading CSV, gzip CSV and Parquet, and the one rule of which files are data
- :mod:`containerlib.recordio`: the RecordIO-protobuf codec
- :mod:`containerlib.predictions`: batch-transform predictions (``.out``) paired with the test shards' labels
- :mod:`containerlib.content_types`: the one vocabulary of content types (constants, JSON Lines' aliases, parsing)
- :mod:`containerlib.linear_learner`: the Linear Learner model (reader, writer) and its response objects

It runs on the scikit-learn image 1.2-1 (Python 3.9, numpy, pandas 1.1, pyarrow 14, scikit-learn) and imports
nothing of ``pipeline``, ``preprocessing`` or ``evaluation`` (tests/contract/test_layers.py). This file imports
nothing, so a job loads only the modules it uses.
"""

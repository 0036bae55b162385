"""The Evaluate processing job: scores batch-transform predictions against the test labels.

Reads, for every RecordIO-protobuf test shard ``F`` under the test dir, the batch-transform output ``F.out`` (jsonlines,
one object per record, in order), checks the counts match file by file, and writes ``evaluation.json``: SageMaker's
model-quality statistics (``binary_classification_metrics``, ``multiclass_classification_metrics`` or
``regression_metrics``, every metric ``{"value", "standard_deviation"}``) plus a ``gate`` section
``{"metric", "value"}`` (higher is always better) that the pipeline's Condition step compares with its threshold.
Classifiers also get ``class_names`` and ``per_class_metrics``; with Preprocess's summary (``--summary-dir``) holding
label values, classes are named by them (in the confusion matrix too) instead of 0..K-1.
Given a model package group, it also scores the group's approved champion on the same test records with the same
code (``champion``: its package and metrics) and writes the ``decision`` the gate takes (``evaluation/champion.py``
fetches the champion through boto3).

Runs in a SageMaker processing container: numpy, pandas, scikit-learn and the standard library only; every path
comes in as an argument. The code bundle's entry script is ``evaluate.py`` (``evaluation/evaluate.py`` here).

Memory is bounded whatever the test split's size: predictions and test shards are streamed a chunk at a time, and
only compact per-record arrays are kept, up to ``collect.MAX_EXACT_RECORDS`` records (the metrics are then exact);
past that cap a fixed-size sketch takes over (``sketch.py``: exact counts and sums, AUC from score histograms within a
stated error bound, an online Poisson bootstrap), and the report's ``sketch`` section says so.

Modules: ``command`` (arguments, exit status), ``job`` (one run), ``containerlib.predictions`` (predictions and test
labels, streamed), ``collect`` (the records kept, or the sketch), ``sketch``, ``metrics``, ``report``
(``evaluation.json``), ``gate`` (the champion and the decision), ``champion`` (the registry lookup through boto3);
the model artifact reader is ``containerlib.linear_learner.model``.
"""

from __future__ import annotations

from containerlib.errors import InputError


class EvaluationError(InputError):
    """Bad input: the message names the file, the record and what was expected."""

"""The serving containers' code: the inference pipeline's first container (the featurizer: raw rows to Linear
Learner's input, with the encoding Preprocess used) and its last (labels: Linear Learner's ``predicted_label`` named
with the label values). Container code (the scikit-learn image, Python 3.9): numpy, pandas and the standard library;
imports no ``pipeline`` module. ``pipeline/local/serving`` runs the same functions in-process.

Modules: ``model`` (the model data: schema and Preprocess summary), ``requests`` (request bodies to rows),
``featurizer`` (rows to features), ``labels`` (responses with label values), ``featurizer_entry`` and
``labels_entry`` (the scikit-learn serving container's handler functions).
"""

from __future__ import annotations


class RequestError(Exception):
    """A request the model cannot answer, with the HTTP status it gets (400 bad rows, 413 too large, 415 unknown
    content type, 406 unknown accept type); the message names the row and column."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status

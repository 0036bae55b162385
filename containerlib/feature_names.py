"""The name of every feature Linear Learner sees, in model order (the order of the weights): a numeric column by its
name, a feature-hashed column's buckets as ``column#bucket``. The one place feature names are made: Preprocess
writes them to its summary, and Evaluate's coefficients, the Python API and ``llpipe execution show`` name the
model's weights with them."""

from __future__ import annotations

from containerlib.encoding import FeatureLayout


def feature_names_in_model_order(layout: FeatureLayout) -> list[str]:
    """One name per feature, in the layout's order: ``column`` for a numeric column, ``column#b`` for bucket ``b``
    of a categorical one."""
    names: list[str] = []
    for column in layout.feature_columns:
        if column in layout.categorical_columns:
            names.extend(f"{column}#{bucket}" for bucket in range(layout.hash_buckets))
        else:
            names.append(column)
    return names

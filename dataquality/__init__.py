"""The data-quality analyzer: a stand-in for Model Monitor's ``sagemaker-model-monitor-analyzer`` image.

It reads a data set (CSV with or without a header, JSON Lines, Parquet, or an endpoint's data-capture files) and
writes what the analyzer writes, in its documented formats: ``statistics.json`` (the item count and, per feature, its
inferred type, completeness, numerical statistics with a KLL quantile sketch or string statistics with the distinct
values), ``constraints.json`` (the suggested constraints: completeness, non-negativity, categorical domains and the
``monitoring_config``) and, given a baseline, ``constraint_violations.json`` (data type, completeness, baseline
drift, missing column, extra column and categorical values checks). Its settings are the analyzer's environment
variables (``dataset_source``, ``dataset_format``, ``output_path``, ``baseline_constraints``,
``baseline_statistics``, ``start_time``, ``end_time``...), so the same request runs the real image on SageMaker and
this code locally.

Container code: Python 3.9, numpy, pandas and pyarrow only (the scikit-learn 1.2-1 image's environment, which runs
it locally), every path from its settings. The entry script is ``analyze.py`` (``dataquality/analyze.py`` here).

Modules: ``command`` (the environment -> ``settings.Settings``, exit status), ``job`` (one run), ``dataset`` (the
data set's chunks of raw values), ``capture`` (data-capture files: the one reader of them), ``values`` (each value's
type), ``profile`` (a column's statistics, accumulated chunk by chunk), ``kll`` (Deequ's KLL sketch),
``statistics`` (``statistics.json``), ``constraints`` (``constraints.json``), ``distance`` (drift distances),
``violations`` (``constraint_violations.json``), ``jackson`` (JSON written as the analyzer's Jackson writes it).
"""

from __future__ import annotations

from containerlib.errors import InputError


class AnalyzerError(InputError):
    """Bad input or settings: the message names the file, the record or variable and what was expected."""

"""The data-quality analyzer's entry script (the code bundle's ``analyze.py``; the job: ``dataquality``).

Settings come from the environment, as Model Monitor's analyzer image takes them: ``dataset_source``,
``dataset_format``, ``output_path``, optional ``baseline_constraints``, ``baseline_statistics``, ``start_time``,
``end_time``, ``categorical_drift_method``.
"""

from __future__ import annotations

import sys

from dataquality.command import main

if __name__ == "__main__":
    sys.exit(main())

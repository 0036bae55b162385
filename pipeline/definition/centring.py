"""Which numeric columns the schema centres, and on what: a column whose offset dwarfs its spread (1e8 + N(0, 1),
seconds of timestamps within a day) loses its spread when it becomes float32, Linear Learner's only input type
(1e8 is held in steps of 8), whatever the trainer does afterwards. The schema names a centre for such a column;
Preprocess and the serving featurizer subtract it in float64 before float32 (``containerlib.encoding``), so the
RecordIO features, the model trained on them and the requests it serves all see the column near zero.

Only such columns are centred (``|mean| > CENTRE_RATIO * std`` in the sample): any other column's features are the
values as written. A centre is the sample mean rounded to a power of ten a hundred times the spread, so the same
table gives the same centre from any sample of it, and what is left (at most 50 spreads) is held by float32 to a
millionth of the spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

CENTRE_RATIO = 1000.0  # |mean| / std above which a column is centred
STEP_SPREADS = 100.0  # the centre is rounded to the power of ten at or below this many spreads


def decide_centres(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, float]:
    """``{column: centre}`` for the numeric ``columns`` of the sample ``frame`` that need one (none: empty)."""
    import numpy as np
    import pandas as pd

    centres: dict[str, float] = {}
    for column in columns:
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        values = values[np.isfinite(values)]
        if values.size < 2:
            continue
        mean = float(values.mean())
        spread = float(np.sqrt(((values - mean) ** 2).mean()))  # around the mean: E[x^2] - mean^2 cancels here
        if not spread > 0 or abs(mean) <= CENTRE_RATIO * spread:
            continue
        step = 10.0 ** math.floor(math.log10(STEP_SPREADS * spread))
        centre = round(mean / step) * step
        centres[column] = float(f"{centre:.15g}")  # 1e8, not 100000000.00000001
    return centres

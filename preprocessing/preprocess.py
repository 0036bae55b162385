"""The Preprocess processing job's entry script (the code bundle's ``preprocess.py``; the job: ``preprocessing``).

python preprocess.py --input-dir D --output-dir O --label-column NAME --predictor-type T [options]
"""

from __future__ import annotations

import sys

from preprocessing.command import main

if __name__ == "__main__":
    sys.exit(main())

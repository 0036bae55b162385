"""The Evaluate processing job's entry script (the code bundle's ``evaluate.py``; the job: ``evaluation``).

python evaluate.py --predictions-dir P --test-dir T --output-dir O --predictor-type TYPE [options]
"""

from __future__ import annotations

import sys

from evaluation.command import main

if __name__ == "__main__":
    sys.exit(main())

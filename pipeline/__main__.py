"""``python -m pipeline`` is the ``llpipe`` command."""

import sys

from pipeline.cli import main

sys.exit(main())

"""``python tests/prebuilt_cli.py BUILT.pickle ARGS...``: the real ``llpipe ARGS...`` (``pipeline.cli.main``: signals,
errors, exit codes, job processes) in its own process, reusing a definition the test built once (building takes the
SDK seconds). A run whose configuration differs from the pickled one builds its own, as ``llpipe`` would."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from pipeline import cli, definition


def main() -> int:
    known_config, built = pickle.loads(Path(sys.argv[1]).read_bytes())
    real = definition.build_definition

    def build(config: object, bundles: object = None) -> object:
        return built if bundles is None and config == known_config else real(config, bundles)

    definition.build_definition = build
    return cli.main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())

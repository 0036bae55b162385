"""Stop Preprocess again and again at the stages `tests/integration/test_preprocess_stop.py` pins and count the runs
that hang (no exit within --timeout) or end otherwise than that test expects. Not part of the suite.

A stop used to hang Preprocess now and then (a race between the signal and the reading threads): one run proves
little, a loop on a loaded machine shows it. A hung run's threads' stacks (faulthandler, on SIGUSR1) are written
to --stacks before it is killed.

    PYTHONPATH=. .venv/bin/python tests/manual/preprocess_stop_loop.py [--runs 30] [--timeout 40] [CASE ...]

CASE is converting-SIGTERM, dealing-SIGHUP, writing-SIGTERM or dealing-SIGINT (default: all four). Prints one line
per case; exits 1 when a run hung or failed.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import test_preprocess_stop as pinned  # noqa: E402 - the child script and table the test runs

CHILD = "import faulthandler, signal\nfaulthandler.register(signal.SIGUSR1, all_threads=True)\n" + pinned.CHILD
CASES = {
    "converting-SIGTERM": ("converting", signal.SIGTERM, "preprocess: stopped by SIGTERM"),
    "dealing-SIGHUP": ("dealing", signal.SIGHUP, "preprocess: stopped by SIGHUP"),
    "writing-SIGTERM": ("writing", signal.SIGTERM, "preprocess: stopped by SIGTERM"),
    "dealing-SIGINT": ("dealing", signal.SIGINT, "preprocess: interrupted (SIGINT)"),
}


def run_once(stage: str, signum: int, message: str, timeout: float, stacks: Path, name: str) -> str:
    """'ok', 'hung' or 'failed' for one stopped run."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        output = tmp / "out"
        argv = ["--input-dir", str(pinned._table(tmp / "in")), "--output-dir", str(output), "--resource-config",
                str(tmp / "absent.json"), "--label-column", "label", "--predictor-type", "binary_classifier",
                "--train-shards", "3", "--chunk-rows", "400"]  # fmt: skip
        process = subprocess.Popen(
            [sys.executable, "-c", CHILD, stage, str(int(signum)), *argv],
            cwd=pinned.REPOSITORY,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGUSR1)  # the stacks, then the end
            time.sleep(1)
            process.kill()
            _, stderr = process.communicate()
            (stacks / f"hung-{name}.txt").write_text(stderr)
            return "hung"
        lines = stderr.strip().splitlines()
        ended_as_pinned = (
            process.returncode == 128 + signum
            and lines
            and lines[-1] == message
            and "Traceback" not in stderr
            and not output.exists()
        )
        if not ended_as_pinned:
            (stacks / f"failed-{name}.txt").write_text(f"exit {process.returncode}\n{stderr}")
            return "failed"
        return "ok"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"of {', '.join(CASES)} (default: all)")
    parser.add_argument("--runs", type=int, default=30, help="runs per case (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=40.0, help="seconds before a run counts as hung")
    parser.add_argument("--stacks", type=Path, default=Path(tempfile.gettempdir()), help="where hung runs' stacks go")
    args = parser.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}: choose from {', '.join(CASES)}")
    bad = 0
    for case in args.cases or list(CASES):
        outcomes = [run_once(*CASES[case], args.timeout, args.stacks, f"{case}-{run}") for run in range(args.runs)]
        hung, failed = outcomes.count("hung"), outcomes.count("failed")
        bad += hung + failed
        print(f"{case}: {args.runs} runs, {hung} hung, {failed} failed otherwise", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

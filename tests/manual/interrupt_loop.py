"""Interrupt `llpipe run` at random moments and check that nothing is left behind (issue 27). Not part of the suite.

Each round starts a real `llpipe run` (staging, Preprocess, Train, ... on a small table, no step cache), sends one of
SIGINT, SIGTERM, SIGHUP or SIGKILL after a random delay, waits for the process to end, then runs the next command
(`llpipe executions --json`) and checks:
- the exit code is 128 + the signal (or -9 for SIGKILL, 0 if the run finished first);
- no record is left "Executing" (a killed run's record is finished off by the next command);
- no process still mentions the work dir (job processes die with llpipe);
- no linear-learner-* folder in the run's system temp folder (TMPDIR), no sandbox/instances folder in a record;
- no partial object (.tmp) in the local S3 folder.

    .venv/bin/python tests/manual/interrupt_loop.py [--rounds 20] [--seed 0] [--max-delay 5]

Prints one line per round and a summary; exits 1 when any round left something behind.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPOSITORY = Path(__file__).resolve().parents[2]
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)
EXPECTED = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGKILL: -9}


def table(path: Path, rows: int = 3000) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(rows, 6)), columns=[f"x{i}" for i in range(6)])
    frame["label"] = (frame["x0"] + frame["x1"] > 0).astype(int)
    frame.to_csv(path, index=False)
    return path


def processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def leftovers(work: Path, temp: Path) -> list[str]:
    """What the run and the next command left behind; empty when clean."""
    found = []
    listed = subprocess.run(
        [sys.executable, "-m", "pipeline", "executions", "--workdir", str(work), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        found.append(f"`llpipe executions` failed: {listed.stderr.strip()[-300:]}")
    else:
        for row in json.loads(listed.stdout or "[]"):
            if row["status"] == "Executing":
                found.append(f"execution {row['id']} still Executing")
    for _ in range(100):  # the kernel ends job processes with llpipe; reaping them takes a moment
        stray = processes_mentioning(str(work))
        if not stray:
            break
        time.sleep(0.1)
    found += [f"stray process {pid}" for pid in stray]
    found += [f"temp folder {path.name}" for path in temp.iterdir()]
    found += [f"scratch {path.relative_to(work)}" for name in ("sandbox", "instances") for path in work.rglob(name)]
    found += [f"partial object {path.relative_to(work)}" for path in (work / "s3").rglob("*.tmp")]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-delay", type=float, default=5.0, help="seconds; the delay is uniform in [0.2, this] (a run takes ~4 s)"
    )
    args = parser.parse_args()
    chooser = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="llpipe-interrupt-loop-"))
    work, temp = root / "w", root / "tmp"
    temp.mkdir()
    data = table(root / "data.csv")
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(REPOSITORY)}
    argv = [sys.executable, "-m", "pipeline", "run", "--workdir", str(work), "--data", str(data)]
    argv += ["--label-column", "label", "--predictor-type", "binary_classifier", "--quiet", "--no-cache"]
    argv += ["--param", "Epochs=30", "--param", "MiniBatchSize=20", "--param", "NumModels=2"]
    failures = 0
    try:
        for number in range(1, args.rounds + 1):
            sent = chooser.choice(SIGNALS)
            delay = chooser.uniform(0.2, args.max_delay)
            process = subprocess.Popen(
                argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                start_new_session=True,
            )  # fmt: skip
            try:
                process.wait(timeout=delay)
                finished_first = True
            except subprocess.TimeoutExpired:
                finished_first = False
                process.send_signal(sent)
            try:
                code = process.wait(timeout=180)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
                problems = [f"did not end within 180 s of {sent.name}"]
            else:
                problems = []
            err = process.stderr.read() if process.stderr else ""
            expected = 0 if finished_first else EXPECTED[sent]
            if code != expected and not (finished_first is False and code == 0 and sent != signal.SIGKILL):
                problems.append(f"exit {code}, expected {expected}: {err.strip()[-200:]}")
            problems += leftovers(work, temp)
            failures += bool(problems)
            what = "finished before the signal" if finished_first else f"{sent.name} after {delay:4.1f} s"
            verdict = "LEFT: " + "; ".join(problems) if problems else "clean"
            print(f"round {number:2d}: {what:28s} exit {code:4d}  {verdict}")
            sys.stdout.flush()
    finally:
        for pid in processes_mentioning(str(work)):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.rounds - failures} of {args.rounds} rounds clean")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

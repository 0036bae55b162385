"""Latency and throughput of ``llpipe serve`` over HTTP, against the same requests answered in-process (the three
containers' code called directly, no HTTP) in the same run: what the server adds.

By default it trains a model on a table with text columns and string labels (a local run, ~15 s) into a temporary
work dir and starts ``llpipe serve --port 0`` there as its own process (the clients do not share its interpreter);
``--url`` measures a server already running (``--endpoint`` its name; the rows are the bundled drift table's
columns: tenure, minutes, calls, plan). Reported: p50/p99 latency of 1-row CSV requests with 1 and 8 concurrent
clients (keep-alive connections, one per client), and rows/s of 1,000-row CSV requests. Targets on the 2-core
development machine: p99 under 10 ms for 1-row requests at 1 client, at least 50,000 rows/s for 1,000-row requests.

    python benchmarks/serve.py [--requests 2000] [--batches 200] [--url http://127.0.0.1:8080 --endpoint NAME]
"""

from __future__ import annotations

import argparse
import http.client
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from containerlib.content_types import CSV, JSON

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY / "tests" / "support"))

import drift_table  # noqa: E402 - the tests' table: numeric and text columns, a label that depends on both

FEATURES = ["tenure", "minutes", "calls", "plan"]


def train(workdir: Path) -> None:
    from pipeline.api import run_local

    frame = drift_table.table(rows=2000)
    frame[drift_table.LABEL] = frame[drift_table.LABEL].map({0: "No", 1: "Yes"})
    execution = run_local(
        frame, drift_table.LABEL, "binary_classifier", workdir=workdir, progress=False, Epochs=3, NumModels=2
    )
    if execution.status != "Succeeded":
        raise SystemExit(f"the training run failed: {execution.failure_reason}")


def start_server(workdir: Path, endpoint: str) -> tuple[subprocess.Popen[str], str]:
    """``llpipe serve`` on a free port, capture off (the service's capture is asynchronous), and its URL."""
    command = [sys.executable, "-m", "pipeline", "serve", "--model-package", "1", "--port", "0"]
    command += ["--workdir", str(workdir), "--endpoint-name", endpoint, "--capture-percentage", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPOSITORY)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("listening on "):
            return process, line.split()[2]
    raise SystemExit(f"llpipe serve exited with {process.wait()} before listening")


def csv_bodies(rows: pd.DataFrame, size: int, count: int) -> list[bytes]:
    """``count`` CSV requests of ``size`` rows each (with a header), cycling through the table."""
    bodies = []
    for index in range(count):
        start = (index * size) % max(len(rows) - size, 1)
        bodies.append(rows.iloc[start : start + size].to_csv(index=False).encode())
    return bodies


def client_latencies(url: str, path: str, bodies: list[bytes]) -> list[float]:
    """Seconds per request, one keep-alive connection, requests one after the other."""
    where = urlparse(url)
    connection = http.client.HTTPConnection(where.hostname, where.port)
    connection.connect()
    # http.client sends the headers and the body in two writes: without TCP_NODELAY, Nagle's algorithm holds the
    # body until the server's delayed ACK (~40 ms). boto3 (urllib3) sets it too.
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {"Content-Type": CSV, "Accept": JSON}
    times = []
    for body in bodies:
        began = time.perf_counter()
        connection.request("POST", path, body, headers)
        response = connection.getresponse()
        response.read()
        times.append(time.perf_counter() - began)
        if response.status != 200:
            raise SystemExit(f"the server answered {response.status}")
    connection.close()
    return times


def concurrent(clients: int, work: Callable[[int], list[float]]) -> tuple[list[float], float]:
    """Every client's latencies and the wall time of all of them."""
    results: list[list[float]] = [[] for _ in range(clients)]

    def run(index: int) -> None:
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [t for result in results for t in result], time.perf_counter() - began


def percentile(times: list[float], q: float) -> float:
    return float(np.percentile(np.array(times) * 1000, q))


def in_process(workdir: Path, bodies: list[bytes]) -> list[float]:
    """The baseline: the same requests through the three containers' code, no HTTP, no server."""
    from pipeline.api._shared import load_settings
    from pipeline.local.s3 import LocalS3
    from pipeline.local.serving.launch import find_package
    from pipeline.local.serving.model import load_served_model
    from pipeline.local.workdir import Workdir

    folder = Workdir.at(workdir)
    package = find_package(folder, load_settings({}), "1")
    model = load_served_model(LocalS3(folder.s3), package.containers, package.arn)
    times = []
    for body in bodies:
        began = time.perf_counter()
        model.invoke(body, CSV, JSON)
        times.append(time.perf_counter() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="1-row requests per measurement")
    parser.add_argument("--batches", type=int, default=200, help="1,000-row requests per measurement")
    parser.add_argument("--url", help="a running llpipe serve (default: train a model and start one)")
    parser.add_argument("--endpoint", default="bench", help="its endpoint name (default: %(default)s)")
    args = parser.parse_args()
    rows = drift_table.table(rows=5000)[FEATURES]
    one_row = csv_bodies(rows, 1, args.requests)
    thousand = csv_bodies(rows, 1000, args.batches)
    with tempfile.TemporaryDirectory(prefix="llpipe-bench-serve-") as temporary:
        workdir = Path(temporary)
        process = None
        try:
            if args.url:
                url = args.url.rstrip("/")
            else:
                train(workdir)
                process, url = start_server(workdir, args.endpoint)
            path = f"/endpoints/{args.endpoint}/invocations"
            client_latencies(url, path, one_row[:200] + thousand[:5])  # warm up
            single, _ = concurrent(1, lambda _: client_latencies(url, path, one_row))
            share = max(args.requests // 8, 1)
            eight, _ = concurrent(8, lambda i: client_latencies(url, path, one_row[i * share : (i + 1) * share]))
            _, wall_1 = concurrent(1, lambda _: client_latencies(url, path, thousand))
            half = max(args.batches // 2, 1)
            _, wall_2 = concurrent(2, lambda i: client_latencies(url, path, thousand[i * half : (i + 1) * half]))
            baseline_single = in_process(workdir, one_row) if not args.url else None
            baseline_thousand = in_process(workdir, thousand) if not args.url else None
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=60)
    print(f"llpipe serve at {url}: CSV requests of the drift table (4 columns, one of them text), labels No/Yes")
    print(f"{'measurement':44} {'p50 ms':>8} {'p99 ms':>8} {'rows/s':>10}")
    print(f"{'1-row requests, 1 client':44} {percentile(single, 50):8.2f} {percentile(single, 99):8.2f} "
          f"{len(single) / sum(single):10.0f}")  # fmt: skip
    print(f"{'1-row requests, 8 clients':44} {percentile(eight, 50):8.2f} {percentile(eight, 99):8.2f}")
    print(f"{'1,000-row requests, 1 client':44} {'':8} {'':8} {args.batches * 1000 / wall_1:10.0f}")
    print(f"{'1,000-row requests, 2 clients':44} {'':8} {'':8} {2 * half * 1000 / wall_2:10.0f}")
    if baseline_single is not None and baseline_thousand is not None:
        inline_rows = 1000 * len(baseline_thousand) / sum(baseline_thousand)
        print(f"{'baseline: in-process, 1-row (no HTTP)':44} {percentile(baseline_single, 50):8.2f} "
              f"{percentile(baseline_single, 99):8.2f}")  # fmt: skip
        print(f"{'baseline: in-process, 1,000-row (no HTTP)':44} {'':8} {'':8} {inline_rows:10.0f}")
        print(
            f"HTTP / in-process: 1-row p50 {percentile(single, 50) / percentile(baseline_single, 50):.2f}x; "
            f"1,000-row throughput {args.batches * 1000 / wall_1 / inline_rows:.2f}x of in-process"
        )
    p99, throughput = percentile(single, 99), args.batches * 1000 / wall_1
    print(f"targets: p99 < 10 ms at 1 client: {'met' if p99 < 10 else 'MISSED'} ({p99:.2f} ms); "
          f">= 50,000 rows/s: {'met' if throughput >= 50_000 else 'MISSED'} ({throughput:,.0f})")  # fmt: skip
    print(f"(median of 1-row latencies at 1 client: {statistics.median(single) * 1000:.2f} ms)")


if __name__ == "__main__":
    main()

"""Evaluate's baseline sample read from S3 through the local endpoint: ranged GetObjects (evaluation/baseline.py's
``RangedObject``) against the baseline, one GetObject per shard streamed and closed once the sample is in, in the same
run on the same channel.

Both read the same records (checked every run). Measured: the bytes the endpoint sent (what S3 would transfer), the
connections it accepted (a closed stream's connection cannot be reused), the GetObject requests, and the time of
``read_train_sample`` (median of ``--repeat`` interleaved runs). The channel is dense RecordIO, ``--shards`` shards
of ``--rows`` records of ``--features`` features in total; the sample is Evaluate's 50,000 records.

    python benchmarks/baseline_sample_s3.py [--rows 400000] [--features 50] [--shards 4] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import boto3
import numpy as np

from containerlib.recordio import write_dense
from evaluation.baseline import MAX_BASELINE_RECORDS, Shard, list_train_shards, read_train_sample
from pipeline.local import aws_endpoint
from pipeline.local.aws_endpoint import serve
from pipeline.local.s3 import LocalS3


class Counters:
    """Bytes the endpoint sent in object bodies and connections it accepted."""

    def __init__(self) -> None:
        self.sent = 0
        self.connections = 0

    def install(self) -> None:
        counters = self
        send_file = aws_endpoint._Handler._send_file
        process_request = aws_endpoint._Server.process_request

        class CountingWriter:
            def __init__(self, wfile: Any) -> None:
                self.wfile = wfile

            def write(self, data: bytes) -> int:
                written = self.wfile.write(data)
                counters.sent += len(data)
                return written

        def counting_send_file(handler: Any, body: Any) -> None:
            wfile, handler.wfile = handler.wfile, CountingWriter(handler.wfile)
            try:
                send_file(handler, body)
            finally:
                handler.wfile = wfile

        def counting_process_request(server: Any, request: Any, address: Any) -> None:
            counters.connections += 1
            process_request(server, request, address)

        aws_endpoint._Handler._send_file = counting_send_file
        aws_endpoint._Server.process_request = counting_process_request


def streamed_and_closed(shards: list[Shard], client: Any) -> list[Shard]:
    """The baseline: each shard opened as one GetObject stream (no Range), closed once the sample is in."""

    def open_stream(name: str) -> Any:
        bucket, _, key = name[len("s3://") :].partition("/")
        return client.get_object(Bucket=bucket, Key=key)["Body"]

    return [Shard(shard.name, shard.size, partial(open_stream, shard.name)) for shard in shards]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    counters = Counters()
    counters.install()
    with tempfile.TemporaryDirectory(prefix="llpipe-bench-sample-") as folder:
        s3 = LocalS3(Path(folder) / "s3")
        rng = np.random.default_rng(0)
        for index, rows in enumerate(np.array_split(np.arange(args.rows), args.shards)):
            path = s3.path(f"s3://bench/train/part-{index}.pbr")
            path.parent.mkdir(parents=True, exist_ok=True)
            features = rng.standard_normal((len(rows), args.features)).astype(np.float32)
            with path.open("wb") as shard:
                write_dense(shard, features, rng.integers(0, 2, len(rows)).astype(np.float32))
        channel = sum(path.stat().st_size for path in s3.path("s3://bench/train").iterdir())
        with serve(s3, Path(folder) / "registry.db", "us-east-1") as running:
            session = boto3.session.Session(
                region_name="us-east-1", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x"
            )
            client = session.client("s3", endpoint_url=running.url)
            names = ("streamed and closed (baseline)", "ranged")
            results: dict[str, dict[str, list[float]]] = {name: {} for name in names}
            samples: dict[str, Any] = {}
            for _ in range(args.repeat):
                for name in names:
                    shards = list_train_shards("s3://bench/train", client)  # as Evaluate does once per job
                    if name != "ranged":
                        shards = streamed_and_closed(shards, client)
                    assert running.endpoint.wait_until_sent(60)
                    before = (counters.sent, counters.connections, len(running.endpoint.requests))
                    started = time.perf_counter()
                    sample = read_train_sample(shards)
                    seconds = time.perf_counter() - started
                    assert running.endpoint.wait_until_sent(60)  # a closed stream's last blocks are counted
                    sent, connections, requests = (
                        counters.sent - before[0],
                        counters.connections - before[1],
                        len(running.endpoint.requests) - before[2],
                    )
                    for metric, value in (
                        ("seconds", seconds),
                        ("sent", sent),
                        ("connections", connections),
                        ("requests", requests),
                    ):
                        results[name].setdefault(metric, []).append(value)
                    samples[name] = sample
    first, second = samples.values()
    assert len(first.labels) == len(second.labels) == MAX_BASELINE_RECORDS
    np.testing.assert_array_equal(first.features, second.features)
    sample_bytes = channel * MAX_BASELINE_RECORDS / args.rows
    print(
        f"channel: {args.shards} shards, {args.rows:,} dense records x {args.features} features,"
        f" {channel / 1e6:.1f} MB;"
        f" sample {MAX_BASELINE_RECORDS:,} records ({sample_bytes / 1e6:.2f} MB); median of {args.repeat}"
        " interleaved runs (after the listing),"
        f" load average {os.getloadavg()[0]:.2f}"
    )
    for name, metrics in results.items():
        print(
            f"  {name:32s} sent {statistics.median(metrics['sent']) / 1e6:7.2f} MB"
            f" (min {min(metrics['sent']) / 1e6:.2f}, max {max(metrics['sent']) / 1e6:.2f})"
            f"  connections {statistics.median(metrics['connections']):.0f}"
            f"  GetObject {statistics.median(metrics['requests']):.0f}"
            f"  {statistics.median(metrics['seconds']) * 1e3:7.1f} ms"
        )
    baseline, ranged_metrics = results.values()
    fewer = statistics.median(baseline["sent"]) / statistics.median(ranged_metrics["sent"])
    faster = statistics.median(baseline["seconds"]) / statistics.median(ranged_metrics["seconds"])
    print(f"ranged vs streamed and closed: {fewer:.2f}x fewer bytes sent, {faster:.2f}x the speed")


if __name__ == "__main__":
    main()

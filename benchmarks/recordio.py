"""Encode/decode throughput of the RecordIO-protobuf codec against a per-row protobuf reference, in the same run.

The reference is what SDK v2 does: one ``aialgs.data.Record`` protobuf message per row (messages compiled from
tests/recordio.proto with grpc_tools), framed with struct; decoding parses one message per record and converts its
repeated fields to numpy, producing the same (X, y) the codec returns. Both sides work on in-memory buffers, and
every run checks that both produce identical bytes and identical arrays.

Targets: encode 50x dense and 10x sparse (issue 15); decode at least 100x dense, and sparse at least as many times
its reference as dense (issue 31). ``--python PATH`` runs the benchmark under another interpreter: ``make bench-env``
builds the Python 3.9 venv with the processing image's numpy 1.24.1 and scipy 1.8.0 plus protobuf and grpcio-tools
for the reference (benchmarks/requirements-py39.txt), and ``make bench-recordio`` runs this there and under .venv.

    python benchmarks/recordio.py [--dense-rows 100000] [--sparse-rows 10000] [--repeat 3] [--python PATH]
    python benchmarks/recordio.py --repeat 3 --python ~/.cache/llpipe/bench-envs/py39/bin/python
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import scipy.sparse

from containerlib import recordio

REPOSITORY = Path(__file__).resolve().parent.parent
ORACLE = REPOSITORY / "tests" / "support" / "protobuf_oracle.py"


def load_oracle() -> ModuleType:
    """tests/support/protobuf_oracle.py: the protobuf compilation and SDK v2-style writers that check the codec."""
    spec = importlib.util.spec_from_file_location("protobuf_oracle", ORACLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _payloads(data: bytes) -> list[bytes]:
    payloads, position = [], 0
    while position < len(data):
        _, length = struct.unpack_from("<II", data, position)
        payloads.append(data[position + 8 : position + 8 + length])
        position += 8 + length + (-length % 4)
    return payloads


def reference_read_dense(pb: ModuleType, data: bytes) -> tuple[np.ndarray, np.ndarray]:
    payloads = _payloads(data)
    record = pb.Record()
    record.ParseFromString(payloads[0])
    X = np.empty((len(payloads), len(record.features["values"].float32_tensor.values)), dtype=np.float32)
    y = np.empty(len(payloads), dtype=np.float32)
    for i, payload in enumerate(payloads):
        record.ParseFromString(payload)
        X[i] = record.features["values"].float32_tensor.values
        y[i] = record.label["values"].float32_tensor.values[0]
    return X, y


def reference_read_sparse(pb: ModuleType, data: bytes) -> tuple[scipy.sparse.csr_matrix, np.ndarray]:
    values, keys, counts, labels = [], [], [], []
    record = pb.Record()
    n_cols = 0
    for payload in _payloads(data):
        record.ParseFromString(payload)
        tensor = record.features["values"].float32_tensor
        values.append(np.array(tensor.values, dtype=np.float32))
        keys.append(np.array(tensor.keys, dtype=np.int64))
        counts.append(len(tensor.keys))
        n_cols = tensor.shape[0]
        labels.append(record.label["values"].float32_tensor.values[0])
    indptr = np.concatenate([[0], np.cumsum(counts)])
    X = scipy.sparse.csr_matrix((np.concatenate(values), np.concatenate(keys), indptr), shape=(len(counts), n_cols))
    return X, np.array(labels, dtype=np.float32)


def random_csr(rng: np.random.Generator, rows: int, columns: int, density: float) -> scipy.sparse.csr_matrix:
    """A CSR matrix with about ``density`` of each row stored (sorted distinct columns), float32 values."""
    per_row = max(1, round(density * columns))
    keys = np.sort(rng.integers(0, columns, size=(rows, per_row)), axis=1)
    keep = np.ones(keys.shape, dtype=bool)
    keep[:, 1:] = keys[:, 1:] != keys[:, :-1]
    indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
    values = rng.standard_normal(int(indptr[-1]), dtype=np.float32)
    return scipy.sparse.csr_matrix((values, keys[keep].astype(np.int32), indptr), shape=(rows, columns))


def timed(codec: Callable[[], Any], reference: Callable[[], Any], repeat: int) -> tuple[float, Any, float, Any]:
    """Best wall times of ``repeat`` runs of the codec and of the reference, interleaved so that a busy machine
    slows both alike, and the last result of each."""
    best_codec = best_reference = float("inf")
    codec_result = reference_result = None
    for _ in range(repeat):
        start = time.perf_counter()
        codec_result = codec()
        best_codec = min(best_codec, time.perf_counter() - start)
        start = time.perf_counter()
        reference_result = reference()
        best_reference = min(best_reference, time.perf_counter() - start)
    return best_codec, codec_result, best_reference, reference_result


def codec_write(writer: Callable[..., int], X: Any, y: np.ndarray) -> bytes:
    out = io.BytesIO()
    writer(out, X, y)
    return out.getvalue()


def report(case: str, rows: int, size: int, codec: float, reference: float) -> float:
    ratio = reference / codec
    print(
        f"{case:<15} {rows / codec:>14,.0f} {size / codec / 1e6:>10,.1f} "
        f"{rows / reference:>14,.0f} {size / reference / 1e6:>10,.1f} {ratio:>8.1f}x"
    )
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dense-rows", type=int, default=100_000)
    parser.add_argument("--dense-features", type=int, default=100)
    parser.add_argument("--sparse-rows", type=int, default=10_000)
    parser.add_argument("--sparse-columns", type=int, default=1_000_000)
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs of codec and reference, in turn")
    parser.add_argument("--python", help="run the benchmark under this interpreter instead (this checkout's code)")
    args = parser.parse_args()
    if args.python:
        argv = [*sys.argv[1:]]
        index = argv.index("--python")
        del argv[index : index + 2]
        path = os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))
        command = [args.python, str(Path(__file__).resolve()), *argv]
        return subprocess.run(command, check=False, env={**os.environ, "PYTHONPATH": path}).returncode
    import platform

    print(f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}")

    with tempfile.TemporaryDirectory() as workdir:
        oracle = load_oracle()
        pb = oracle.compile_record_protobuf(Path(workdir))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.dense_rows, args.dense_features), dtype=np.float32)
    y = rng.integers(0, 2, args.dense_rows).astype(np.float32)
    S = random_csr(rng, args.sparse_rows, args.sparse_columns, args.density)
    y_sparse = rng.standard_normal(args.sparse_rows).astype(np.float32)

    print(f"dense: {args.dense_rows:,} x {args.dense_features} float32 with labels")
    print(f"sparse: {args.sparse_rows:,} x {args.sparse_columns:,}, {S.nnz:,} stored values, with labels")
    print("reference: one protobuf message per row (SDK v2 style), compiled from tests/recordio.proto")
    print("codec: numpy, vectorised per batch; write_sparse encodes batches on up to 2 threads (the reference, 1)")
    print(f"{'case':<15} {'codec rows/s':>14} {'codec MB/s':>10} {'ref rows/s':>14} {'ref MB/s':>10} {'ratio':>9}")
    ratios = {}
    for name, matrix, labels, writer, ref_write, ref_read in (
        ("dense", X, y, recordio.write_dense, oracle.v2_dense, reference_read_dense),
        ("sparse", S, y_sparse, recordio.write_sparse, oracle.v2_sparse, reference_read_sparse),
    ):
        codec_seconds, data, reference_seconds, reference_data = timed(
            lambda: codec_write(writer, matrix, labels),  # noqa: B023
            lambda: ref_write(pb, matrix, labels),  # noqa: B023
            args.repeat,
        )
        if data != reference_data:
            raise SystemExit(f"{name}: codec and reference bytes differ")
        ratios[f"{name} encode"] = report(
            f"{name} encode", matrix.shape[0], len(data), codec_seconds, reference_seconds
        )
        codec_seconds, (X_read, y_read), reference_seconds, (X_ref, y_ref) = timed(
            lambda: recordio.read(io.BytesIO(data)),  # noqa: B023
            lambda: ref_read(pb, data),  # noqa: B023
            args.repeat,
        )
        same = np.array_equal(y_read, y_ref) and (
            all(np.array_equal(getattr(X_read, a), getattr(X_ref, a)) for a in ("indptr", "indices", "data"))
            if scipy.sparse.issparse(X_read)
            else np.array_equal(X_read, X_ref)
        )
        if not same:
            raise SystemExit(f"{name}: codec and reference decoded different arrays")
        ratios[f"{name} decode"] = report(
            f"{name} decode", matrix.shape[0], len(data), codec_seconds, reference_seconds
        )
    targets = {"dense encode": 50.0, "dense decode": 100.0, "sparse encode": 10.0}
    targets["sparse decode"] = ratios["dense decode"]  # as many times its reference as dense rows
    missed = [f"{case} {ratios[case]:.1f}x < {goal:.1f}x" for case, goal in targets.items() if ratios[case] < goal]
    print(
        "targets (encode 50x dense, 10x sparse; decode 100x dense, sparse >= dense):",
        "met" if not missed else "MISSED: " + ", ".join(missed),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

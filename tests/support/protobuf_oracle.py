"""The codec's independent oracle: aialgs.data messages compiled from tests/support/recordio.proto, and SDK v2's
writers.

The writers follow SDK v2's ``write_numpy_to_dense_tensor`` / ``write_spmatrix_to_sparse_tensor``: one protobuf
message per row, framed as dmlc RecordIO. The tests check the codec against them and ``benchmarks/recordio.py``
times the codec against them, so both use this one copy.
"""

from __future__ import annotations

import importlib.util
import io
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import scipy.sparse

MAGIC = 0xCED7230A  # stated here, not imported, so the oracle does not lean on the codec it checks
PROTO = Path(__file__).resolve().parent / "recordio.proto"
MAGIC_BYTES = struct.pack("<I", MAGIC)
MAGIC_AS_FLOAT32 = np.array([MAGIC], dtype="<u4").view("<f4")[0]  # the magic number read as a feature value


def compile_record_protobuf(out_dir: Path) -> ModuleType:
    """The aialgs.data messages, compiled from tests/support/recordio.proto with grpc_tools into ``out_dir``."""
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO.parent}", f"--python_out={out_dir}", PROTO.name],
        check=True,
    )
    spec = importlib.util.spec_from_file_location("recordio_pb2", Path(out_dir) / "recordio_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def frame(payload: bytes, flag: int = 0) -> bytes:
    """One RecordIO frame: magic, flag and length, payload, zero padding to 4 bytes."""
    return struct.pack("<II", MAGIC, (flag << 29) | len(payload)) + payload + b"\0" * (-len(payload) % 4)


def _write_frame(out: io.BytesIO, payload: bytes) -> None:
    out.write(struct.pack("<II", MAGIC, len(payload)))
    out.write(payload)
    out.write(b"\0" * (-len(payload) % 4))


def v2_dense(pb: ModuleType, X: np.ndarray, y: np.ndarray | None = None) -> bytes:
    """Dense rows as SDK v2 writes them."""
    out = io.BytesIO()
    record = pb.Record()
    for i, row in enumerate(X):
        record.Clear()
        record.features["values"].float32_tensor.values.extend(row)
        if y is not None:
            record.label["values"].float32_tensor.values.extend([y[i]])
        _write_frame(out, record.SerializeToString())
    return out.getvalue()


def v2_sparse(pb: ModuleType, X: scipy.sparse.spmatrix, y: np.ndarray | None = None) -> bytes:
    """Sparse rows (values, keys, shape) as SDK v2 writes them."""
    out = io.BytesIO()
    record = pb.Record()
    csr = X.tocsr()
    for i in range(csr.shape[0]):
        record.Clear()
        row = csr.getrow(i)
        record.features["values"].float32_tensor.values.extend(row.data)
        record.features["values"].float32_tensor.keys.extend(row.indices.astype(np.uint64))
        if y is not None:
            record.label["values"].float32_tensor.values.extend([y[i]])
        record.features["values"].float32_tensor.shape.extend([csr.shape[1]])
        _write_frame(out, record.SerializeToString())
    return out.getvalue()


def dmlc_split_frames(payload: bytes) -> bytes:
    """dmlc RecordIOWriter::WriteRecord: split the payload at every aligned magic number (which is dropped)."""
    out = b""
    start = 0
    for i in range(0, len(payload) // 4 * 4, 4):
        if payload[i : i + 4] == MAGIC_BYTES:
            out += MAGIC_BYTES + struct.pack("<I", ((1 if start == 0 else 2) << 29) | (i - start)) + payload[start:i]
            start = i + 4
    rest = payload[start:]
    out += MAGIC_BYTES + struct.pack("<I", ((3 if start else 0) << 29) | len(rest)) + rest
    return out + b"\0" * (-len(payload) % 4)


def payloads(data: bytes) -> list[bytes]:
    """SDK v2's read_recordio: whole (unsplit) records only."""
    out, position = [], 0
    while position < len(data):
        magic, length = struct.unpack_from("<II", data, position)
        assert magic == MAGIC and length >> 29 == 0
        out.append(data[position + 8 : position + 8 + length])
        position += 8 + length + (-length % 4)
    return out

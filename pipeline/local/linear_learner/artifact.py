"""The model artifact in the service's layout, readable without MXNet.

``model.tar.gz`` holds ``model_algo-1``, a zip of ``mx-mod-symbol.json`` (MXNet symbol graph data ->
FullyConnected ``fc0`` -> output), ``mx-mod-0000.params`` (MXNet NDArray list file with ``arg:fc0_weight`` of shape
(K, feature_dim) and ``arg:fc0_bias`` of shape (K,)), ``manifest.json`` and ``additional-params.json``
(predictor type, loss, threshold, classes). Normalisation is already folded into the weights.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from pipeline.files import atomic_path
from pipeline.local.linear_learner.model import LinearModel

LIST_MAGIC = 0x112  # kMXAPINDArrayListMagic
NDARRAY_V2_MAGIC = 0xF993FAC9
DEFAULT_STORAGE = 0
CPU_DEVICE = 1
DTYPE_FLAGS = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2, np.dtype(np.uint8): 3,
               np.dtype(np.int32): 4, np.dtype(np.int8): 5, np.dtype(np.int64): 6}
FLAG_DTYPES = {flag: dtype for dtype, flag in DTYPE_FLAGS.items()}
INNER_NAME = "model_algo-1"
SYMBOL_FILE = "mx-mod-symbol.json"
PARAMS_FILE = "mx-mod-0000.params"
MXNET_VERSION = 10500


class ArtifactError(ValueError):
    """The model artifact is missing a part or is not in the expected format."""


def encode_ndarray_list(arrays: dict[str, np.ndarray]) -> bytes:
    """MXNet's ``mx.nd.save`` format for a dict of dense arrays (little endian)."""
    out = io.BytesIO()
    out.write(struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays)))
    for array in arrays.values():
        array = np.ascontiguousarray(array)
        out.write(struct.pack("<Ii", NDARRAY_V2_MAGIC, DEFAULT_STORAGE))
        out.write(struct.pack("<i", array.ndim))
        out.write(struct.pack(f"<{array.ndim}q", *array.shape))
        out.write(struct.pack("<ii", CPU_DEVICE, 0))
        out.write(struct.pack("<i", DTYPE_FLAGS[array.dtype]))
        out.write(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
    out.write(struct.pack("<Q", len(arrays)))
    for name in arrays:
        encoded = name.encode()
        out.write(struct.pack("<Q", len(encoded)))
        out.write(encoded)
    return out.getvalue()


def decode_ndarray_list(data: bytes) -> dict[str, np.ndarray]:
    """Parse an MXNet NDArray list file (dense V2 arrays) into a dict."""
    view = memoryview(data)
    position = 0

    def take(fmt: str):
        nonlocal position
        size = struct.calcsize(fmt)
        if position + size > len(view):
            raise ArtifactError(f"params file truncated at byte {position}")
        values = struct.unpack_from(fmt, view, position)
        position += size
        return values

    magic, _reserved, count = take("<QQQ")
    if magic != LIST_MAGIC:
        raise ArtifactError(f"params file starts with {magic:#x}; expected the NDArray list magic {LIST_MAGIC:#x}")
    arrays = []
    for index in range(count):
        array_magic, storage = take("<Ii")
        if array_magic != NDARRAY_V2_MAGIC or storage != DEFAULT_STORAGE:
            raise ArtifactError(f"array {index}: expected a dense V2 NDArray")
        (ndim,) = take("<i")
        shape = take(f"<{ndim}q")
        take("<ii")  # context
        (flag,) = take("<i")
        dtype = FLAG_DTYPES[flag].newbyteorder("<")
        size = int(np.prod(shape)) * dtype.itemsize
        if position + size > len(view):
            raise ArtifactError(f"array {index}: data truncated")
        arrays.append(np.frombuffer(view[position:position + size], dtype=dtype).reshape(shape).copy())
        position += size
    (name_count,) = take("<Q")
    names = []
    for _ in range(name_count):
        (length,) = take("<Q")
        names.append(bytes(view[position:position + length]).decode())
        position += length
    if name_count != count:
        raise ArtifactError(f"params file has {count} arrays but {name_count} names")
    return dict(zip(names, arrays, strict=True))


def symbol_graph(model: LinearModel) -> dict:
    """MXNet symbol JSON: data -> FullyConnected fc0 -> output (sigmoid, softmax or identity)."""
    hidden = str(model.weights.shape[1])
    if model.predictor_type == "multiclass_classifier":
        output = {"op": "softmax", "name": "output", "attrs": {"axis": "-1"}, "inputs": [[3, 0, 0]]}
    elif model.predictor_type == "binary_classifier" and model.loss == "logistic":
        output = {"op": "sigmoid", "name": "output", "inputs": [[3, 0, 0]]}
    else:
        output = {"op": "_copy", "name": "output", "inputs": [[3, 0, 0]]}
    return {
        "nodes": [
            {"op": "null", "name": "data", "inputs": []},
            {"op": "null", "name": "fc0_weight", "attrs": {"num_hidden": hidden}, "inputs": []},
            {"op": "null", "name": "fc0_bias", "attrs": {"num_hidden": hidden}, "inputs": []},
            {"op": "FullyConnected", "name": "fc0", "attrs": {"num_hidden": hidden, "no_bias": "False",
                                                             "flatten": "True"},
             "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
            output,
        ],
        "arg_nodes": [0, 1, 2],
        "node_row_ptr": [0, 1, 2, 3, 4, 5],
        "heads": [[4, 0, 0]],
        "attrs": {"mxnet_version": ["int", MXNET_VERSION]},
    }


def save_model(model: LinearModel, path: Path, extra: dict | None = None) -> None:
    """Write ``path`` (model.tar.gz) atomically: a temporary name, renamed when complete."""
    params = encode_ndarray_list({
        "arg:fc0_weight": np.ascontiguousarray(model.weights.T, dtype=np.float32),
        "arg:fc0_bias": np.ascontiguousarray(model.bias, dtype=np.float32),
    })
    symbol = json.dumps(symbol_graph(model), indent=2).encode()
    additional = {
        "predictor_type": model.predictor_type,
        "loss": model.loss,
        "threshold": model.threshold,
        "num_classes": model.num_classes,
        "feature_dim": model.feature_dim,
        "normalization": "folded into fc0 (raw features in, raw-scale predictions out)",
        **(extra or {}),
    }
    files = {SYMBOL_FILE: symbol, PARAMS_FILE: params,
             "additional-params.json": json.dumps(additional, indent=2, sort_keys=True).encode()}
    manifest = {"algorithm": "linear-learner", "format": "mxnet-module", "epoch": 0,
                "files": {name: hashlib.sha256(content).hexdigest() for name, content in files.items()}}
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True).encode()
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    payload = inner.getvalue()
    with atomic_path(path) as temporary, tarfile.open(temporary, "w:gz") as tar:
        info = tarfile.TarInfo(INNER_NAME)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))


def load_model(path: Path) -> LinearModel:
    """Read a model.tar.gz written by ``save_model`` (or in the same layout)."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            member = tar.extractfile(INNER_NAME)
            if member is None:
                raise KeyError(INNER_NAME)
            payload = member.read()
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            params = decode_ndarray_list(archive.read(PARAMS_FILE))
            additional = json.loads(archive.read("additional-params.json"))
    except (OSError, KeyError, tarfile.TarError, zipfile.BadZipFile, json.JSONDecodeError) as error:
        raise ArtifactError(f"{path}: not a Linear Learner model artifact ({error})") from None
    try:
        weights = params["arg:fc0_weight"]
        bias = params["arg:fc0_bias"]
    except KeyError as error:
        raise ArtifactError(f"{path}: {PARAMS_FILE} has no {error}") from None
    return LinearModel(predictor_type=additional["predictor_type"], loss=additional["loss"],
                       weights=np.ascontiguousarray(weights.T, dtype=np.float32),
                       bias=np.asarray(bias, dtype=np.float32), threshold=float(additional["threshold"]))

"""Read and score a SageMaker Linear Learner ``model.tar.gz`` with numpy alone (no MXNet), as the service scores it.

Container-safe (Python 3.9, standard library + numpy): the Evaluate processing job and the local backend share it.
The layout, from the bytes of artifacts the service trained: ``model.tar.gz`` (gzip, ustar) holds one member
``model_algo-1``, a zip of ``manifest.json``, ``additional-params.json`` (threshold, loss_type, predictor_type,
metrics_params; either key order), ``mx-mod-symbol.json`` and ``mx-mod-0000.params`` (MXNet NDArray list:
float32 ``arg:fc0_weight`` (feature_dim, outputs) and ``arg:fc0_bias`` (1, outputs)). Normalisation is folded into
the weights, so scores come from the raw features: regressor ``X @ W + b`` in float32, binary
``sigmoid(X @ W + b)`` with ``predicted_label = score > threshold``, multiclass softmax with the argmax as label.

    model = read_model("model.tar.gz", feature_dim=30)
    score, predicted_label = model.predict(features)   # predicted_label is None for a regressor
"""

from __future__ import annotations

import gzip
import io
import json
import math
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from containerlib.names import PREDICTOR_TYPES

INNER_MEMBER = "model_algo-1"
MANIFEST = "manifest.json"
ADDITIONAL_PARAMS = "additional-params.json"
SYMBOL = "mx-mod-symbol.json"
PARAMS = "mx-mod-0000.params"
MEMBERS = (MANIFEST, ADDITIONAL_PARAMS, SYMBOL, PARAMS)  # the order the service writes them in
WEIGHT = "arg:fc0_weight"
BIAS = "arg:fc0_bias"
NDARRAY_LIST_MAGIC = 0x112  # kMXAPINDArrayListMagic
NDARRAY_V2_MAGIC = 0xF993FAC9
DENSE_STORAGE = 0
FLOAT32_FLAG = 0  # mshadow::kFloat32
METRICS_PARAMS_KEYS = (
    "quantile",
    "huber_delta",
    "margin",
    "loss_insensitivity",
    "eps_insensitive_loss_type",
    "accuracy_top_k",
    "f_beta",
    "positive_example_weight_mult",
    "class_weights",
    "threshold",
)


class ModelArtifactError(ValueError):
    """The artifact is unreadable or not a Linear Learner model; the message names the file and the member."""


@dataclass(frozen=True)
class LinearModel:
    """A Linear Learner model on the raw feature scale: float32 weights (feature_dim, K), bias (K,)."""

    predictor_type: str
    loss_type: str
    weights: np.ndarray  # (feature_dim, K) float32; K = num_classes for multiclass, else 1
    bias: np.ndarray  # (K,) float32
    threshold: float = 0.5  # binary only: positive when the score is greater than this
    metrics_params: dict[str, Any] | None = None  # additional-params.json's metrics_params, when known

    @property
    def feature_dim(self) -> int:
        return int(self.weights.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.weights.shape[1]) if self.predictor_type == "multiclass_classifier" else 2

    def linear_scores(self, features: Any) -> np.ndarray:
        """``X @ W + b`` as float32, shape (n, K); ``features`` (float32 values) a dense array or a scipy sparse
        matrix. Accumulated in float64 and rounded once: a float32 product's rounding depended on the array's memory
        order and on how many rows came at once (BLAS kernels sum in different orders), so a row served alone and the
        same row in a batch transform's block could score a few ulps apart."""
        if isinstance(features, np.ndarray) or not hasattr(features, "tocsr"):
            features = np.asarray(features, dtype=np.float32).astype(np.float64)
        else:
            features = features.astype(np.float32).astype(np.float64)
        product = np.asarray(features @ self.weights.astype(np.float64), dtype=np.float64)
        return (product + self.bias.astype(np.float64)).astype(np.float32)

    def predict(self, features: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """(score, predicted_label), float32: binary (n,) and labels, multiclass (n, K) and argmax, regressor (n,)."""
        z = self.linear_scores(features)
        if self.predictor_type == "regressor":
            return z[:, 0], None
        if self.predictor_type == "multiclass_classifier":
            exp = np.exp(z - z.max(axis=1, keepdims=True))
            probabilities = exp / exp.sum(axis=1, keepdims=True)
            return probabilities, np.argmax(probabilities, axis=1)
        if self.loss_type == "logistic":
            with np.errstate(over="ignore"):  # exp(-z) overflows to inf for very negative z: the score is 0
                score = np.float32(1.0) / (np.float32(1.0) + np.exp(-z[:, 0]))
        else:  # hinge_loss: the margin itself
            score = z[:, 0]
        return score, (score > self.threshold).astype(np.int64)


# Bounds on what an artifact may unpack to, so a crafted model.tar.gz (a few MB of gzip inflating to gigabytes)
# is refused from its headers, before it is inflated, in bounded memory. The service writes one tar member and four
# zip members; the JSON members are a few kB; the parameters are 4 bytes a weight and bias, feature_dim x outputs
# with outputs at most Linear Learner's largest num_classes, below PARAMS_LIMIT in any case.
MAX_TAR_MEMBERS = 8
MAX_ZIP_MEMBERS = 8
JSON_MEMBER_LIMIT = 4 * 2**20  # bytes, each of manifest.json, additional-params.json, mx-mod-symbol.json
PARAMS_LIMIT = 2**30  # bytes of mx-mod-0000.params whatever the feature_dim (268 million float32 values)
MAX_OUTPUTS = 1_000_000  # num_classes is 3 to 1,000,000
NDARRAY_OVERHEAD = 4096  # the NDArray list's headers and names
ZIP_OVERHEAD = 64 * 1024  # the zip's local headers and central directory


def params_limit(feature_dim: int | None) -> int:
    """The largest ``mx-mod-0000.params`` accepted: (feature_dim + 1) x the most outputs x 4 bytes with
    ``feature_dim`` known (the data's), :data:`PARAMS_LIMIT` otherwise or when smaller."""
    if feature_dim is None:
        return PARAMS_LIMIT
    return min(PARAMS_LIMIT, (feature_dim + 1) * MAX_OUTPUTS * 4 + NDARRAY_OVERHEAD)


def unpacked_limit(feature_dim: int | None) -> int:
    """The largest ``model_algo-1`` (the zip) accepted: its members' limits and the zip's own overhead."""
    return params_limit(feature_dim) + 3 * JSON_MEMBER_LIMIT + ZIP_OVERHEAD


def read_model(path: Any, feature_dim: int | None = None) -> LinearModel:
    """Read a model.tar.gz file (streamed: what it unpacks to is bounded, :func:`unpacked_limit`); with
    ``feature_dim``, also require the weights to take that many features."""
    try:
        with open(path, "rb") as handle:
            members = read_members(handle, str(path), feature_dim)
    except OSError as error:
        raise ModelArtifactError(f"{path}: cannot read the model artifact ({error.strerror or error})") from None
    return _from_members(members, str(path), feature_dim)


def read_model_bytes(data: bytes, name: str = "model.tar.gz", feature_dim: int | None = None) -> LinearModel:
    """Read the bytes of a model.tar.gz; ``name`` is used in error messages."""
    return _from_members(read_members(io.BytesIO(data), name, feature_dim), name, feature_dim)


def _from_members(members: dict[str, bytes], name: str, feature_dim: int | None) -> LinearModel:
    where = f"{name}: {INNER_MEMBER}/"
    manifest = _json_member(members, MANIFEST, where)
    if manifest.get("mx-mod") != "mxnet_module":
        raise ModelArtifactError(f'{where}{MANIFEST}: expected "mx-mod": "mxnet_module", got {manifest!r}')
    additional = _json_member(members, ADDITIONAL_PARAMS, where)
    symbol = _json_member(members, SYMBOL, where)
    arrays = decode_ndarray_list(members[PARAMS], f"{where}{PARAMS}")
    return _model(additional, symbol, arrays, where, feature_dim)


def read_members(source: Any, name: str, feature_dim: int | None = None) -> dict[str, bytes]:
    """The four zip members of ``model_algo-1`` inside the gzip tar read from ``source`` (a binary file; any
    member order). The tar is streamed and every size checked from its header before anything is inflated: more
    members than :data:`MAX_TAR_MEMBERS`, or more bytes than :func:`unpacked_limit`, is refused."""
    limit = unpacked_limit(feature_dim)
    inner = None
    try:
        with tarfile.open(fileobj=source, mode="r|gz") as tar:
            total = 0
            for count, info in enumerate(tar, start=1):
                total += info.size
                if count > MAX_TAR_MEMBERS or total > limit:
                    raise ModelArtifactError(_too_large(name, f"its tar member {info.name!r}", total, limit, count))
                if info.name == INNER_MEMBER:
                    handle = tar.extractfile(info)
                    if handle is None:
                        raise ModelArtifactError(f"{name}: {INNER_MEMBER} is not a regular file")
                    inner = handle.read()
                    break
    except (tarfile.ReadError, zlib.error, EOFError, gzip.BadGzipFile) as error:
        raise ModelArtifactError(f"{name}: not a complete gzip file or tar archive ({error})") from None
    except (tarfile.TarError, OSError) as error:
        raise ModelArtifactError(f"{name}: not a readable tar archive ({error})") from None
    if inner is None:
        raise ModelArtifactError(f"{name}: the tar has no member {INNER_MEMBER}")
    return _zip_members(inner, name, feature_dim)


def _zip_members(inner: bytes, name: str, feature_dim: int | None) -> dict[str, bytes]:
    """The four members of the zip ``inner``, each refused when its declared size is above its limit (zipfile
    reads a member no further than its declared size)."""
    try:
        with zipfile.ZipFile(io.BytesIO(inner)) as archive:
            infos = archive.infolist()
            present = [info.filename for info in infos]
            if len(infos) > MAX_ZIP_MEMBERS:
                raise ModelArtifactError(
                    f"{name}: {INNER_MEMBER} has {len(infos)} members; a Linear Learner model has {len(MEMBERS)}"
                )
            missing = [member for member in MEMBERS if member not in present]
            if missing:
                raise ModelArtifactError(f"{name}: {INNER_MEMBER} has no member {missing[0]} (it has {present})")
            members = {}
            for member in MEMBERS:
                size = archive.getinfo(member).file_size
                limit = params_limit(feature_dim) if member == PARAMS else JSON_MEMBER_LIMIT
                if size > limit:
                    raise ModelArtifactError(_too_large(name, f"{INNER_MEMBER}/{member}", size, limit))
                try:
                    members[member] = archive.read(member)
                except (zipfile.BadZipFile, zlib.error, EOFError) as error:
                    raise ModelArtifactError(f"{name}: {INNER_MEMBER}/{member} is corrupt ({error})") from None
            return members
    except zipfile.BadZipFile as error:
        raise ModelArtifactError(f"{name}: {INNER_MEMBER} is not a zip archive ({error})") from None


def _too_large(name: str, what: str, size: int, limit: int, count: int | None = None) -> str:
    members = f" in {count} member(s) (at most {MAX_TAR_MEMBERS})" if count is not None else ""
    return (
        f"{name}: {what} unpacks to {size:,} bytes{members}, above the {limit:,} bytes a Linear Learner model of "
        "this size can need; refused unread (a damaged or crafted artifact)"
    )


def decode_ndarray_list(data: bytes, where: str) -> dict[str, np.ndarray]:
    """Parse MXNet's NDArray list file (``mx.nd.save``; dense float32 arrays) into {name: array}."""
    position = 0

    def take(fmt: str) -> tuple[Any, ...]:
        nonlocal position
        size = struct.calcsize(fmt)
        if position + size > len(data):
            raise ModelArtifactError(f"{where}: truncated at byte {position} of {len(data)}")
        values = struct.unpack_from(fmt, data, position)
        position += size
        return values

    magic, _reserved, count = take("<QQQ")
    if magic != NDARRAY_LIST_MAGIC:
        raise ModelArtifactError(
            f"{where}: starts with {magic:#x}; expected the NDArray list magic {NDARRAY_LIST_MAGIC:#x}"
        )
    if count > 64:
        raise ModelArtifactError(f"{where}: claims {count} arrays; a Linear Learner model has 2")
    arrays = []
    for index in range(count):
        array_magic, storage = take("<Ii")
        if array_magic != NDARRAY_V2_MAGIC or storage != DENSE_STORAGE:
            raise ModelArtifactError(
                f"{where}: array {index} is not a dense V2 NDArray (magic {array_magic:#x}, storage type {storage})"
            )
        (ndim,) = take("<i")
        if not 0 <= ndim <= 8:
            raise ModelArtifactError(f"{where}: array {index} has {ndim} dimensions")
        shape = take(f"<{ndim}q")
        take("<ii")  # device type and id
        (flag,) = take("<i")
        if flag != FLOAT32_FLAG:
            raise ModelArtifactError(f"{where}: array {index} has dtype flag {flag}; expected float32 ({FLOAT32_FLAG})")
        if any(dim < 0 for dim in shape):
            raise ModelArtifactError(f"{where}: array {index} has a negative dimension {shape}")
        size = int(np.prod(shape, dtype=np.int64)) * 4
        if position + size > len(data):
            raise ModelArtifactError(
                f"{where}: array {index} data truncated (needs {size} bytes at {position}, the file has {len(data)})"
            )
        arrays.append(
            np.frombuffer(data, dtype="<f4", count=size // 4, offset=position).reshape(shape).astype(np.float32)
        )
        position += size
    (name_count,) = take("<Q")
    if name_count != count:
        raise ModelArtifactError(f"{where}: {count} arrays but {name_count} names")
    names = []
    for _ in range(name_count):
        (length,) = take("<Q")
        if position + length > len(data):
            raise ModelArtifactError(f"{where}: truncated in the array names")
        names.append(data[position : position + length].decode("utf-8", errors="replace"))
        position += length
    if position != len(data):
        raise ModelArtifactError(f"{where}: {len(data) - position} unexpected bytes after the array names")
    return dict(zip(names, arrays))  # noqa: B905 - Python 3.9 has no strict=; the counts are equal (checked)


def _json_member(members: dict[str, bytes], member: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(members[member])
    except (ValueError, UnicodeDecodeError) as error:
        raise ModelArtifactError(f"{where}{member}: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise ModelArtifactError(f"{where}{member}: expected a JSON object, got {type(value).__name__}")
    return value


def _model(
    additional: dict[str, Any],
    symbol: dict[str, Any],
    arrays: dict[str, np.ndarray],
    where: str,
    feature_dim: int | None,
) -> LinearModel:
    """Check what scoring needs (predictor type, loss, threshold, names and shapes) and build the model."""
    params_where = f"{where}{PARAMS}"
    additional_where = f"{where}{ADDITIONAL_PARAMS}"
    predictor_type = additional.get("predictor_type")
    if predictor_type not in PREDICTOR_TYPES:
        raise ModelArtifactError(
            f"{additional_where}: predictor_type {predictor_type!r} is not one of {', '.join(PREDICTOR_TYPES)}"
        )
    loss_type = additional.get("loss_type")
    if not isinstance(loss_type, str):
        raise ModelArtifactError(f"{additional_where}: loss_type is missing or not a string ({loss_type!r})")
    threshold = additional.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ModelArtifactError(f"{additional_where}: threshold is missing or not a finite number ({threshold!r})")
    if sorted(arrays) != sorted((WEIGHT, BIAS)):
        raise ModelArtifactError(
            f"{params_where}: expected exactly the arrays {WEIGHT} and {BIAS}, got {sorted(arrays)}"
        )
    weights, bias = arrays[WEIGHT], arrays[BIAS]
    if weights.ndim != 2:
        raise ModelArtifactError(f"{params_where}: {WEIGHT} has shape {weights.shape}; expected (feature_dim, outputs)")
    outputs = weights.shape[1]
    if predictor_type == "multiclass_classifier" and outputs < 2:
        raise ModelArtifactError(
            f"{params_where}: {WEIGHT} has shape {weights.shape}; a multiclass classifier "
            "needs (feature_dim, num_classes) with num_classes >= 2"
        )
    if predictor_type != "multiclass_classifier" and outputs != 1:
        raise ModelArtifactError(
            f"{params_where}: {WEIGHT} has shape {weights.shape}; a {predictor_type} needs (feature_dim, 1)"
        )
    if bias.shape != (1, outputs):
        raise ModelArtifactError(
            f"{params_where}: {BIAS} has shape {bias.shape}; expected (1, {outputs}) to go "
            f"with {WEIGHT} {weights.shape}"
        )
    declared = _declared_weight_shape(symbol, f"{where}{SYMBOL}")
    if declared is not None and declared != weights.shape:
        raise ModelArtifactError(
            f"{where}{SYMBOL}: fc0_weight is declared {declared} but {PARAMS} holds {WEIGHT} {weights.shape}"
        )
    if feature_dim is not None and weights.shape[0] != feature_dim:
        raise ModelArtifactError(
            f"{params_where}: {WEIGHT} has shape {weights.shape}: the model takes "
            f"{weights.shape[0]} features, the data has {feature_dim}"
        )
    metrics_params = additional.get("metrics_params")
    return LinearModel(
        predictor_type=predictor_type,
        loss_type=loss_type,
        weights=np.ascontiguousarray(weights, dtype=np.float32),
        bias=np.ascontiguousarray(bias[0], dtype=np.float32),
        threshold=float(threshold),
        metrics_params=metrics_params if isinstance(metrics_params, dict) else None,
    )


def _declared_weight_shape(symbol: dict[str, Any], where: str) -> tuple[int, ...] | None:
    """The ``__shape__`` the symbol declares for fc0_weight, if it declares one."""
    nodes = symbol.get("nodes")
    if not isinstance(nodes, list):
        raise ModelArtifactError(f'{where}: no "nodes" list')
    for node in nodes:
        if isinstance(node, dict) and node.get("name") == "fc0_weight":
            attrs = node.get("attrs") or node.get("attr") or {}  # MXNet before 1.0 wrote "attr"
            text = attrs.get("__shape__") if isinstance(attrs, dict) else None
            if text is None:
                return None
            try:
                return tuple(int(part) for part in str(text).strip("()").split(",") if part.strip())
            except ValueError:
                raise ModelArtifactError(f"{where}: fc0_weight __shape__ {text!r} is not a shape") from None
    raise ModelArtifactError(f"{where}: no fc0_weight node")

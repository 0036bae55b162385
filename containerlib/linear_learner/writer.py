"""Write a Linear Learner model exactly as the service lays it out, so a locally trained model is one SageMaker serves.

``model.tar.gz``: gzip (header mtime 0, no file name), ustar, one member ``model_algo-1`` (mode 0644, uid/gid 0, no
user or group names), a zip of four STORED members: ``manifest.json``, ``additional-params.json``,
``mx-mod-symbol.json`` (the MXNet 1.3.1 graph the service writes) and ``mx-mod-0000.params``. The bytes depend on the
model alone. :mod:`containerlib.linear_learner.model` reads it back; training writes through
``pipeline.linear_learner.artifact``.
"""

from __future__ import annotations

import gzip
import io
import json
import struct
import tarfile
import zipfile
from typing import Any

import numpy as np

from containerlib.linear_learner.model import (
    ADDITIONAL_PARAMS,
    BIAS,
    DENSE_STORAGE,
    FLOAT32_FLAG,
    INNER_MEMBER,
    MANIFEST,
    METRICS_PARAMS_KEYS,
    NDARRAY_LIST_MAGIC,
    NDARRAY_V2_MAGIC,
    PARAMS,
    SYMBOL,
    WEIGHT,
    LinearModel,
)

MANIFEST_BYTES = b'{"mx-mod": "mxnet_module", "additional-params.json": "json", "version": 1}'
MXNET_VERSION = 10301
CPU_DEVICE = 1
NAME_NUMBER = 0  # MXNet's generated node names carry a counter (dot0, broadcast_plus0, ...)
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest zip timestamp: the bytes depend on the model only
OUTPUT_OPS = {"binary_classifier": "LogisticRegressionOutput", "regressor": "LinearRegressionOutput"}


def float32_double(value: float) -> float:
    """``value`` rounded to float32, as the double the service writes."""
    return float(np.float32(value))


def encode_ndarray_list(arrays: dict[str, np.ndarray]) -> bytes:
    """MXNet's ``mx.nd.save`` format (little endian) for dense float32 arrays."""
    out = io.BytesIO()
    out.write(struct.pack("<QQQ", NDARRAY_LIST_MAGIC, 0, len(arrays)))
    for array in arrays.values():
        array = np.ascontiguousarray(array, dtype="<f4")
        out.write(struct.pack("<Iii", NDARRAY_V2_MAGIC, DENSE_STORAGE, array.ndim))
        out.write(struct.pack(f"<{array.ndim}q", *array.shape))
        out.write(struct.pack("<iii", CPU_DEVICE, 0, FLOAT32_FLAG))
        out.write(array.tobytes())
    out.write(struct.pack("<Q", len(arrays)))
    for name in arrays:
        encoded = name.encode()
        out.write(struct.pack("<Q", len(encoded)))
        out.write(encoded)
    return out.getvalue()


def _node(op: str, name: str, inputs: list[int], attrs: dict[str, str] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"op": op, "name": name}
    if attrs:
        node["attrs"] = attrs
    node["inputs"] = [[index, 0, 0] for index in inputs]
    return node


def symbol_graph(predictor_type: str, feature_dim: int, outputs: int) -> dict[str, Any]:
    """The service's MXNet graph: data . fc0_weight + fc0_bias, then the predictor type's output (loss) head."""
    n = NAME_NUMBER
    multiclass = predictor_type == "multiclass_classifier"
    nodes = [
        _node("null", "data", []),
        _node("null", "fc0_weight", [], {"__shape__": f"({feature_dim}, {outputs})"}),
        _node("dot", f"dot{n}", [0, 1]),
        _node("null", "fc0_bias", [], {"__lr_mult__": "1.0" if multiclass else "10.0", "__shape__": f"(1, {outputs})"}),
        _node("broadcast_add", f"broadcast_plus{n}", [2, 3]),
    ]
    if not multiclass:
        op = OUTPUT_OPS[predictor_type]
        nodes += [_node("null", "out_label", []), _node(op, f"{op.lower()}{n}", [4, 5])]
        arg_nodes = [0, 1, 3, 5]
    else:  # softmax probabilities, plus 1e-30 times the cross-entropy loss so the loss is trained
        nodes += [
            _node("max", f"max{n}", [4], {"axis": "1"}),  # 5
            _node("Reshape", f"reshape{n}", [5], {"shape": "(-1, 1)"}),  # 6
            _node("broadcast_sub", f"broadcast_minus{n}", [4, 6]),  # 7
            _node("_plus_scalar", f"_plusscalar{n}", [7], {"scalar": "10.0"}),  # 8
            _node("exp", f"exp{n}", [8]),  # 9
            _node("sum", f"sum{n}", [9], {"axis": "1"}),  # 10
            _node("Reshape", f"reshape{n + 1}", [10], {"shape": "(-1, 1)"}),  # 11
            _node("broadcast_div", f"broadcast_div{n}", [9, 11]),  # 12
            _node("clip", f"clip{n}", [12], {"a_max": "1.0", "a_min": "1e-10"}),  # 13
            _node("BlockGrad", f"blockgrad{n}", [13]),  # 14
            _node("null", "out_label", []),  # 15
            _node("Reshape", f"reshape{n + 2}", [15], {"shape": "(-1,)"}),  # 16
            _node("pick", f"pick{n}", [13, 16]),  # 17
            _node("log", f"log{n}", [17]),  # 18
            _node("_mul_scalar", f"_mulscalar{n}", [18], {"scalar": "-1.0"}),  # 19
            _node("make_loss", f"makeloss{n}", [19]),  # 20
            _node("Reshape", f"reshape{n + 3}", [20], {"shape": "(-1, 1)"}),  # 21
            _node("_mul_scalar", f"_mulscalar{n + 1}", [21], {"scalar": "1e-30"}),  # 22
            _node("broadcast_add", f"broadcast_plus{n + 1}", [14, 22]),  # 23
        ]
        arg_nodes = [0, 1, 3, 15]
    return {
        "nodes": nodes,
        "arg_nodes": arg_nodes,
        "node_row_ptr": list(range(len(nodes) + 1)),
        "heads": [[len(nodes) - 1, 0, 0]],
        "attrs": {"mxnet_version": ["int", MXNET_VERSION]},
    }


def symbol_json(graph: dict[str, Any]) -> bytes:
    """MXNet's layout of a symbol file: one field per line, lists of numbers (inputs, heads) inline."""
    inline = json.dumps
    nodes = []
    for node in graph["nodes"]:
        fields = [f'      "op": {inline(node["op"])}', f'      "name": {inline(node["name"])}']
        if "attrs" in node:
            attrs = ",\n".join(f"        {inline(k)}: {inline(v)}" for k, v in node["attrs"].items())
            fields.append(f'      "attrs": {{\n{attrs}\n      }}')
        fields.append(f'      "inputs": {inline(node["inputs"])}')
        nodes.append("    {\n" + ",\n".join(fields) + "\n    }")
    lines = ["{", '  "nodes": [', ",\n".join(nodes), "  ],"]
    lines += [f'  "{key}": {inline(graph[key])},' for key in ("arg_nodes", "node_row_ptr", "heads")]
    lines += [f'  "attrs": {inline(graph["attrs"])}', "}"]
    return "\n".join(lines).encode()


def additional_params(model: LinearModel) -> dict[str, Any]:
    """``additional-params.json`` in the service's key order (threshold, loss_type, predictor_type, metrics_params)."""
    threshold = float32_double(model.threshold)
    params = dict(model.metrics_params or {})
    params["threshold"] = threshold
    return {
        "threshold": threshold,
        "loss_type": model.loss_type,
        "predictor_type": model.predictor_type,
        "metrics_params": {key: params.get(key) for key in METRICS_PARAMS_KEYS},
    }


def artifact_bytes(model: LinearModel) -> bytes:
    """The model.tar.gz bytes of ``model``; the same model always gives the same bytes."""
    outputs = model.weights.shape[1]
    members = {
        MANIFEST: MANIFEST_BYTES,
        ADDITIONAL_PARAMS: json.dumps(additional_params(model)).encode(),
        SYMBOL: symbol_json(symbol_graph(model.predictor_type, model.feature_dim, outputs)),
        PARAMS: encode_ndarray_list(
            {
                WEIGHT: model.weights,
                BIAS: np.asarray(model.bias, dtype=np.float32).reshape(1, outputs),
            }
        ),
    }
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, content in members.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3  # unix
            info.external_attr = 0o100644 << 16
            archive.writestr(info, content)
    payload = inner.getvalue()
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo(INNER_MEMBER)
        info.size, info.mode, info.mtime = len(payload), 0o644, 0
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        tar.addfile(info, io.BytesIO(payload))
    return gzip.compress(tar_bytes.getvalue(), mtime=0)

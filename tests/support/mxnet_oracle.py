"""Independent of the code under test: a parser of MXNet's NDArray list format and a builder of Linear Learner
artifacts laid out as the service writes them (from the bytes of real artifacts, issue 18), in both key orders."""

from __future__ import annotations

import gzip
import io
import json
import struct
import tarfile
import zipfile

import numpy as np


def parse_mxnet_params(data: bytes) -> dict[str, np.ndarray]:
    """An independent reader of MXNet's NDArray list format (ndarray.cc: NDArray::Save / MXNDArraySave)."""
    offset = 0

    def read(fmt):
        nonlocal offset
        values = struct.unpack_from("<" + fmt, data, offset)
        offset += struct.calcsize("<" + fmt)
        return values

    header, reserved, count = read("QQQ")
    assert (header, reserved) == (0x112, 0)
    arrays = []
    for _ in range(count):
        magic, storage_type = read("Ii")
        assert magic == 0xF993FAC9 and storage_type == 0  # NDARRAY_V2_MAGIC, kDefaultStorage
        (ndim,) = read("i")
        shape = read(f"{ndim}q")
        device_type, device_id = read("ii")
        assert (device_type, device_id) == (1, 0)  # cpu(0)
        (type_flag,) = read("i")
        assert type_flag == 0  # mshadow::kFloat32
        size = int(np.prod(shape))
        arrays.append(np.frombuffer(data, dtype="<f4", count=size, offset=offset).reshape(shape))
        offset += 4 * size
    (name_count,) = read("Q")
    names = []
    for _ in range(name_count):
        (length,) = read("Q")
        names.append(data[offset : offset + length].decode())
        offset += length
    assert offset == len(data)
    return dict(zip(names, arrays, strict=True))


def mxnet_params(arrays: list[tuple[str, np.ndarray]]) -> bytes:
    """``mx.nd.save`` bytes of named dense float32 arrays, written field by field."""
    body = struct.pack("<QQQ", 0x112, 0, len(arrays))
    for _, array in arrays:
        body += struct.pack("<IiI", 0xF993FAC9, 0, array.ndim) + struct.pack(f"<{array.ndim}q", *array.shape)
        body += struct.pack("<iii", 1, 0, 0) + np.asarray(array, dtype="<f4").tobytes()
    body += struct.pack("<Q", len(arrays))
    for name, _ in arrays:
        body += struct.pack("<Q", len(name)) + name.encode()
    return body


def service_symbol(predictor_type: str, feature_dim: int, outputs: int, number: int = 32) -> dict:
    """The service's mx-mod-symbol.json: 7 nodes (binary, regressor) or 24 (multiclass)."""

    def node(op, name, inputs=(), attrs=None):
        return {"op": op, "name": name, **({"attrs": attrs} if attrs else {}), "inputs": [[i, 0, 0] for i in inputs]}

    n = number
    head = [
        node("null", "data"),
        node("null", "fc0_weight", attrs={"__shape__": f"({feature_dim}, {outputs})"}),
        node("dot", f"dot{n}", [0, 1]),
        node(
            "null",
            "fc0_bias",
            attrs={
                "__lr_mult__": "1.0" if predictor_type == "multiclass_classifier" else "10.0",
                "__shape__": f"(1, {outputs})",
            },
        ),
        node("broadcast_add", f"broadcast_plus{n}", [2, 3]),
    ]
    if predictor_type == "binary_classifier":
        nodes = head + [
            node("null", "out_label"),
            node("LogisticRegressionOutput", f"logisticregressionoutput{n}", [4, 5]),
        ]
        arg_nodes = [0, 1, 3, 5]
    elif predictor_type == "regressor":
        nodes = head + [node("null", "out_label"), node("LinearRegressionOutput", f"linearregressionoutput{n}", [4, 5])]
        arg_nodes = [0, 1, 3, 5]
    else:
        nodes = head + [
            node("max", f"max{n}", [4], {"axis": "1"}),
            node("Reshape", f"reshape{n}", [5], {"shape": "(-1, 1)"}),
            node("broadcast_sub", f"broadcast_minus{n}", [4, 6]),
            node("_plus_scalar", f"_plusscalar{n}", [7], {"scalar": "10.0"}),
            node("exp", f"exp{n}", [8]),
            node("sum", f"sum{n}", [9], {"axis": "1"}),
            node("Reshape", f"reshape{n + 1}", [10], {"shape": "(-1, 1)"}),
            node("broadcast_div", f"broadcast_div{n}", [9, 11]),
            node("clip", f"clip{n}", [12], {"a_max": "1.0", "a_min": "1e-10"}),
            node("BlockGrad", f"blockgrad{n}", [13]),
            node("null", "out_label"),
            node("Reshape", f"reshape{n + 2}", [15], {"shape": "(-1,)"}),
            node("pick", f"pick{n}", [13, 16]),
            node("log", f"log{n}", [17]),
            node("_mul_scalar", f"_mulscalar{n}", [18], {"scalar": "-1.0"}),
            node("make_loss", f"makeloss{n}", [19]),
            node("Reshape", f"reshape{n + 3}", [20], {"shape": "(-1, 1)"}),
            node("_mul_scalar", f"_mulscalar{n + 1}", [21], {"scalar": "1e-30"}),
            node("broadcast_add", f"broadcast_plus{n + 1}", [14, 22]),
        ]
        arg_nodes = [0, 1, 3, 15]
    return {
        "nodes": nodes,
        "arg_nodes": arg_nodes,
        "node_row_ptr": list(range(len(nodes) + 1)),
        "heads": [[len(nodes) - 1, 0, 0]],
        "attrs": {"mxnet_version": ["int", 10301]},
    }


LOSS_TYPES = {"binary_classifier": "logistic", "regressor": "squared_loss", "multiclass_classifier": "softmax_loss"}


def additional_params_json(predictor_type: str, threshold: float, *, old_order: bool) -> bytes:
    """additional-params.json: 2022-2024 key order, or 2018-2021's (predictor_type last, metrics_params reordered)."""
    threshold = float(np.float32(threshold))
    metrics = {
        "quantile": None,
        "huber_delta": None,
        "margin": None,
        "loss_insensitivity": None,
        "eps_insensitive_loss_type": None,
        "accuracy_top_k": 3,
        "f_beta": None if predictor_type == "regressor" else 1.0,
        "positive_example_weight_mult": 1.0,
        "class_weights": None,
        "threshold": threshold,
    }
    if old_order:
        metrics = dict(reversed(list(metrics.items())))
        document = {
            "threshold": threshold,
            "loss_type": LOSS_TYPES[predictor_type],
            "metrics_params": metrics,
            "predictor_type": predictor_type,
        }
    else:
        document = {
            "threshold": threshold,
            "loss_type": LOSS_TYPES[predictor_type],
            "predictor_type": predictor_type,
            "metrics_params": metrics,
        }
    return json.dumps(document).encode()


NEW_MANIFEST = b'{"mx-mod": "mxnet_module", "additional-params.json": "json", "version": 1}'
OLD_MANIFEST = b'{"additional-params.json": "json", "mx-mod": "mxnet_module", "version": 1}'


def zip_stored(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, content in members:
            archive.writestr(name, content)
    return out.getvalue()


def tar_gz(member: str, payload: bytes) -> bytes:
    """gzip (mtime 0) of a ustar archive holding ``payload`` as ``member`` (0644, root, no user names)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo(member)
        info.size, info.mode, info.uid, info.gid, info.uname, info.gname = len(payload), 0o644, 0, 0, "", ""
        tar.addfile(info, io.BytesIO(payload))
    return gzip.compress(out.getvalue(), mtime=0)


def service_members(
    predictor_type: str, weights: np.ndarray, bias: np.ndarray, threshold: float = 0.5, *, old_order: bool = False
) -> list[tuple[str, bytes]]:
    """The four zip members as the service writes them; the 2018-2021 variant also stores them in another order."""
    feature_dim, outputs = weights.shape
    arrays = [("arg:fc0_weight", weights), ("arg:fc0_bias", bias.reshape(1, outputs))]
    members = [
        ("manifest.json", OLD_MANIFEST if old_order else NEW_MANIFEST),
        ("additional-params.json", additional_params_json(predictor_type, threshold, old_order=old_order)),
        ("mx-mod-symbol.json", json.dumps(service_symbol(predictor_type, feature_dim, outputs), indent=2).encode()),
        ("mx-mod-0000.params", mxnet_params(arrays[::-1] if old_order else arrays)),
    ]
    return members[::-1] if old_order else members


def service_artifact(
    predictor_type: str, weights: np.ndarray, bias: np.ndarray, threshold: float = 0.5, *, old_order: bool = False
) -> bytes:
    """A model.tar.gz as the service writes it."""
    return tar_gz(
        "model_algo-1", zip_stored(service_members(predictor_type, weights, bias, threshold, old_order=old_order))
    )


MEMBERS = ["manifest.json", "additional-params.json", "mx-mod-symbol.json", "mx-mod-0000.params"]
TOP_KEYS = ["threshold", "loss_type", "predictor_type", "metrics_params"]
METRICS_KEYS = [
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
]
SIMPLE_OPS = ["null", "null", "dot", "null", "broadcast_add", "null"]
MULTICLASS_OPS = [
    "null",
    "null",
    "dot",
    "null",
    "broadcast_add",
    "max",
    "Reshape",
    "broadcast_sub",
    "_plus_scalar",
    "exp",
    "sum",
    "Reshape",
    "broadcast_div",
    "clip",
    "BlockGrad",
    "null",
    "Reshape",
    "pick",
    "log",
    "_mul_scalar",
    "make_loss",
    "Reshape",
    "_mul_scalar",
    "broadcast_add",
]


def ordered(data: bytes) -> list:
    """JSON with its key order kept: objects as lists of (key, value) pairs."""
    return json.loads(data, object_pairs_hook=list)


def check_service_layout(data: bytes, *, new_order: bool = True) -> dict:
    """Every byte-level fact of the service's layout; returns the parsed members for further checks."""
    assert data[:4] == b"\x1f\x8b\x08\x00"  # gzip, deflate, no flags (no file name)
    assert struct.unpack("<I", data[4:8])[0] == 0  # header mtime 0
    raw_tar = gzip.decompress(data)
    header = raw_tar[:512]
    assert header[257:263] == b"ustar\x00" and header[263:265] == b"00"  # POSIX ustar
    assert header[:100].rstrip(b"\x00") == b"model_algo-1"
    assert int(header[100:108].rstrip(b"\x00 "), 8) == 0o644
    assert int(header[108:116].rstrip(b"\x00 "), 8) == 0 and int(header[116:124].rstrip(b"\x00 "), 8) == 0
    assert header[265:297].rstrip(b"\x00") == b"" and header[297:329].rstrip(b"\x00") == b""  # uname, gname
    assert header[156:157] in (b"0", b"\x00")  # regular file
    with tarfile.open(fileobj=io.BytesIO(raw_tar)) as tar:
        [member] = tar.getmembers()
        inner = tar.extractfile(member).read()
    with zipfile.ZipFile(io.BytesIO(inner)) as archive:
        infos = archive.infolist()
        assert sorted(info.filename for info in infos) == sorted(MEMBERS)
        if new_order:
            assert [info.filename for info in infos] == MEMBERS
        assert all(info.compress_type == zipfile.ZIP_STORED for info in infos)
        for info in infos:  # the local file header agrees: compression method 0 (STORED)
            assert struct.unpack_from("<H", inner, info.header_offset + 8)[0] == 0
        members = {info.filename: archive.read(info.filename) for info in infos}
    manifest = ordered(members["manifest.json"])
    if new_order:
        assert members["manifest.json"] == NEW_MANIFEST
    else:
        assert sorted(manifest) == sorted(ordered(NEW_MANIFEST))
    additional = ordered(members["additional-params.json"])
    top = dict(additional)
    if new_order:
        assert [key for key, _ in additional] == TOP_KEYS
        assert [key for key, _ in top["metrics_params"]] == METRICS_KEYS
    else:
        assert sorted(key for key, _ in additional) == sorted(TOP_KEYS)
    metrics = dict(top["metrics_params"])
    assert sorted(metrics) == sorted(METRICS_KEYS)
    threshold = top["threshold"]
    assert isinstance(threshold, float) and float(np.float32(threshold)) == threshold == metrics["threshold"]
    assert metrics["accuracy_top_k"] == 3 and metrics["positive_example_weight_mult"] == 1.0
    assert metrics["class_weights"] is None
    predictor_type = top["predictor_type"]
    assert (
        top["loss_type"]
        == {"binary_classifier": "logistic", "regressor": "squared_loss", "multiclass_classifier": "softmax_loss"}[
            predictor_type
        ]
    )
    if predictor_type == "regressor":
        assert threshold == 0.5 and metrics["f_beta"] is None
    else:
        assert metrics["f_beta"] == 1.0
    params = parse_mxnet_params(members["mx-mod-0000.params"])
    assert sorted(params) == ["arg:fc0_bias", "arg:fc0_weight"]
    weight, bias = params["arg:fc0_weight"], params["arg:fc0_bias"]
    assert weight.dtype == bias.dtype == np.dtype("<f4") and weight.ndim == 2
    feature_dim, outputs = weight.shape
    assert bias.shape == (1, outputs)
    assert outputs == 1 if predictor_type != "multiclass_classifier" else outputs >= 2
    symbol = json.loads(members["mx-mod-symbol.json"])
    nodes = symbol["nodes"]
    assert symbol["attrs"] == {"mxnet_version": ["int", 10301]}
    assert nodes[0] == {"op": "null", "name": "data", "inputs": []}
    assert nodes[1] == {
        "op": "null",
        "name": "fc0_weight",
        "attrs": {"__shape__": f"({feature_dim}, {outputs})"},
        "inputs": [],
    }
    assert nodes[2]["name"].startswith("dot") and nodes[2]["inputs"] == [[0, 0, 0], [1, 0, 0]]
    lr_mult = "1.0" if predictor_type == "multiclass_classifier" else "10.0"
    assert nodes[3] == {
        "op": "null",
        "name": "fc0_bias",
        "inputs": [],
        "attrs": {"__lr_mult__": lr_mult, "__shape__": f"(1, {outputs})"},
    }
    assert list(nodes[3]["attrs"]) == ["__lr_mult__", "__shape__"]
    assert nodes[4]["name"].startswith("broadcast_plus") and nodes[4]["inputs"] == [[2, 0, 0], [3, 0, 0]]
    assert symbol["node_row_ptr"] == list(range(len(nodes) + 1))
    assert symbol["heads"] == [[len(nodes) - 1, 0, 0]]
    if predictor_type == "multiclass_classifier":
        assert [n["op"] for n in nodes] == MULTICLASS_OPS and symbol["arg_nodes"] == [0, 1, 3, 15]
        assert nodes[15]["name"] == "out_label"
        assert nodes[13]["attrs"] == {"a_max": "1.0", "a_min": "1e-10"} and nodes[8]["attrs"] == {"scalar": "10.0"}
        assert nodes[23]["inputs"] == [[14, 0, 0], [22, 0, 0]]
    else:
        output = "LogisticRegressionOutput" if predictor_type == "binary_classifier" else "LinearRegressionOutput"
        assert [n["op"] for n in nodes] == SIMPLE_OPS + [output] and symbol["arg_nodes"] == [0, 1, 3, 5]
        assert nodes[5]["name"] == "out_label" and nodes[6]["name"].startswith(output.lower())
        assert nodes[6]["inputs"] == [[4, 0, 0], [5, 0, 0]]
    return {"additional": top, "metrics": metrics, "params": params, "symbol": symbol}

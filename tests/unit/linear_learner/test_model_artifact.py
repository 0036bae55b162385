"""The model artifact is the service's, both ways: artifacts built from the service's layout (issue 18) by an
independent builder score as the service scores them, and what the local Linear Learner writes passes the same byte
level layout checks, reads back and scores exactly as the trainer predicted."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from support.mxnet_oracle import (
    check_service_layout,
    mxnet_params,
    parse_mxnet_params,
    service_artifact,
    service_members,
    service_symbol,
    tar_gz,
    zip_stored,
)

from containerlib.linear_learner.model import LinearModel, ModelArtifactError, read_model, read_model_bytes
from containerlib.linear_learner.writer import artifact_bytes
from pipeline.linear_learner.artifact import save_model
from pipeline.linear_learner.collective import LocalCollective
from pipeline.linear_learner.hyperparameters import parse_hyperparameters
from pipeline.linear_learner.inference import prediction_lines, transform_files
from pipeline.linear_learner.trainer import Dataset, fit

# ---------------------------------------------------------------- reading the service's artifacts

RNG = np.random.default_rng(18)
X = RNG.normal(size=(40, 6)).astype(np.float32) * 3
PREDICTORS = {
    "binary_classifier": (RNG.normal(size=(6, 1)).astype(np.float32), np.array([0.25], np.float32), 0.37),
    "regressor": (RNG.normal(size=(6, 1)).astype(np.float32) * 100, np.array([512.5], np.float32), 0.5),
    "multiclass_classifier": (RNG.normal(size=(6, 4)).astype(np.float32), RNG.normal(size=4).astype(np.float32), 0.5),
}


@pytest.mark.parametrize("old_order", [False, True], ids=["2022-2024", "2018-2021"])
@pytest.mark.parametrize("predictor_type", list(PREDICTORS))
def test_a_service_artifact_scores_as_the_service_scores(predictor_type, old_order, tmp_path):
    weights, bias, threshold = PREDICTORS[predictor_type]
    data = service_artifact(predictor_type, weights, bias, threshold, old_order=old_order)
    check_service_layout(data, new_order=not old_order)
    path = tmp_path / "model.tar.gz"
    path.write_bytes(data)
    model = read_model(path, feature_dim=6)
    assert (model.predictor_type, model.feature_dim) == (predictor_type, 6)
    score, label = model.predict(X)
    z = np.zeros((len(X), weights.shape[1]), np.float32)  # float32 arithmetic, feature by feature
    for j in range(weights.shape[0]):
        z += X[:, j : j + 1] * weights[j]
    z += bias
    if predictor_type == "regressor":
        assert label is None and score.dtype == np.float32
        np.testing.assert_allclose(score, z[:, 0], rtol=1e-5)
    elif predictor_type == "binary_classifier":
        expected = 1.0 / (1.0 + np.exp(-z[:, 0].astype(np.float64)))
        np.testing.assert_allclose(score, expected, rtol=1e-5)
        assert model.threshold == float(np.float32(0.37))
        np.testing.assert_array_equal(label, (score > model.threshold).astype(int))
        assert 0 < label.sum() < len(label)  # the threshold splits this data
    else:
        exp = np.exp(z.astype(np.float64))
        np.testing.assert_allclose(score, exp / exp.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(label, np.argmax(z, axis=1))
        assert len(set(label.tolist())) > 1


def test_regressor_scores_in_float32_like_the_endpoint(tmp_path):
    """A real endpoint answered 1209.7744140625: float32 arithmetic gives that, float64 gives 1209.774398803711."""
    path = tmp_path / "model.tar.gz"
    path.write_bytes(service_artifact("regressor", np.ones((2, 1), np.float32), np.zeros(1, np.float32)))
    features = tmp_path / "features.csv"
    features.write_text("1000,209.7744\n")
    [output] = transform_files(path, [features], tmp_path / "out", "text/csv")
    assert output.read_text() == '{"score": 1209.7744140625}\n'
    assert float(np.float64(np.float32(1000)) + np.float64(np.float32(209.7744))) != 1209.7744140625


def test_binary_predicted_label_is_score_above_the_threshold(tmp_path):
    # bias = logit(0.75) in float32: the score sits exactly on or just off a 0.75 threshold
    bias = np.array([np.log(3.0)], np.float32)
    model = read_model_bytes(service_artifact("binary_classifier", np.zeros((1, 1), np.float32), bias, 0.75))
    score, label = model.predict(np.zeros((1, 1), np.float32))
    assert label.tolist() == [int(score[0] > np.float32(0.75))]
    lines = prediction_lines(model, np.array([[0.0]], np.float32))
    assert json.loads(lines[0]) == {"score": float(score[0]), "predicted_label": int(label[0])}


# ---------------------------------------------------------------- clear errors


def _cli_transform(model: Path, tmp_path: Path, capsys) -> tuple[int, str]:
    from pipeline.cli import main

    features = tmp_path / "features.csv"
    features.write_text("1,2,3,4,5,6\n")
    code = main(
        [
            "linear-learner",
            "transform",
            "--model",
            str(model),
            "--input",
            str(features),
            "--output",
            str(tmp_path / "predictions"),
            "--content-type",
            "text/csv",
        ]
    )
    captured = capsys.readouterr()
    return code, captured.err


def test_truncated_artifact_is_one_clear_line_naming_the_file(tmp_path, capsys):
    weights, bias, threshold = PREDICTORS["binary_classifier"]
    data = service_artifact("binary_classifier", weights, bias, threshold)
    path = tmp_path / "model.tar.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelArtifactError, match=r"model\.tar\.gz: not a complete gzip file"):
        read_model(path)
    code, err = _cli_transform(path, tmp_path, capsys)
    assert code != 0 and str(path) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "predictions").exists() or not any((tmp_path / "predictions").iterdir())


def test_missing_member_is_named(tmp_path, capsys):
    weights, bias, threshold = PREDICTORS["regressor"]
    members = [m for m in service_members("regressor", weights, bias, threshold) if m[0] != "mx-mod-0000.params"]
    path = tmp_path / "model.tar.gz"
    path.write_bytes(tar_gz("model_algo-1", zip_stored(members)))
    with pytest.raises(ModelArtifactError, match=r"model_algo-1 has no member mx-mod-0000\.params"):
        read_model(path)
    code, err = _cli_transform(path, tmp_path, capsys)
    assert code != 0 and "mx-mod-0000.params" in err and "Traceback" not in err
    path.write_bytes(tar_gz("model_algo-2", zip_stored(members)))
    with pytest.raises(ModelArtifactError, match="the tar has no member model_algo-1"):
        read_model(path)


def _with_params(predictor_type: str, arrays: list[tuple[str, np.ndarray]], **symbol_shape) -> bytes:
    weights, bias, threshold = PREDICTORS[predictor_type]
    members = dict(service_members(predictor_type, weights, bias, threshold))
    members["mx-mod-0000.params"] = mxnet_params(arrays)
    if symbol_shape:
        members["mx-mod-symbol.json"] = json.dumps(service_symbol(predictor_type, **symbol_shape)).encode()
    return tar_gz("model_algo-1", zip_stored(list(members.items())))


@pytest.mark.parametrize(
    ("arrays", "symbol_shape", "message"),
    [
        (
            [("arg:fc0_weight", np.zeros((6, 1))), ("arg:fc0_bias", np.zeros(1))],
            {},
            r"mx-mod-0000\.params: arg:fc0_bias has shape \(1,\); expected \(1, 1\)",
        ),
        (
            [("arg:fc0_weight", np.zeros((6, 2))), ("arg:fc0_bias", np.zeros((1, 2)))],
            {"feature_dim": 6, "outputs": 2},
            r"mx-mod-0000\.params: arg:fc0_weight has shape \(6, 2\); a binary_classifier needs \(feature_dim, 1\)",
        ),
        (
            [("arg:fc0_weight", np.zeros((1, 6))), ("arg:fc0_bias", np.zeros((1, 1)))],
            {},
            r"mx-mod-0000\.params: arg:fc0_weight has shape \(1, 6\); a binary_classifier needs \(feature_dim, 1\)",
        ),
        (
            [("arg:fc0_weight", np.zeros((5, 1))), ("arg:fc0_bias", np.zeros((1, 1)))],
            {},
            r"mx-mod-symbol\.json: fc0_weight is declared \(6, 1\) "
            r"but mx-mod-0000\.params holds arg:fc0_weight \(5, 1\)",
        ),
        ([("arg:fc0_weight", np.zeros((6, 1)))], {}, r"expected exactly the arrays arg:fc0_weight and arg:fc0_bias"),
    ],
)
def test_wrong_params_are_named(arrays, symbol_shape, message, tmp_path):
    path = tmp_path / "model.tar.gz"
    path.write_bytes(_with_params("binary_classifier", arrays, **symbol_shape))
    with pytest.raises(ModelArtifactError, match=message) as error:
        read_model(path)
    assert str(error.value).startswith(f"{path}: model_algo-1/")


def test_feature_count_is_checked_against_the_weights(tmp_path, capsys):
    weights, bias, threshold = PREDICTORS["binary_classifier"]
    path = tmp_path / "model.tar.gz"
    path.write_bytes(service_artifact("binary_classifier", weights, bias, threshold))
    with pytest.raises(ModelArtifactError, match=r"the model takes 6 features, the data has 5"):
        read_model(path, feature_dim=5)
    features = tmp_path / "five.csv"
    features.write_text("1,2,3,4,5\n")
    from pipeline.cli import main

    code = main(
        [
            "linear-learner",
            "transform",
            "--model",
            str(path),
            "--input",
            str(features),
            "--output",
            str(tmp_path / "predictions"),
            "--content-type",
            "text/csv",
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and "five.csv: records have 5 features; the model expects 6" in err


def test_truncated_params_and_bad_additional_params_are_named(tmp_path):
    weights, bias, threshold = PREDICTORS["binary_classifier"]
    members = dict(service_members("binary_classifier", weights, bias, threshold))
    members["mx-mod-0000.params"] = members["mx-mod-0000.params"][:-20]
    with pytest.raises(ModelArtifactError, match=r"model_algo-1/mx-mod-0000\.params: truncated"):
        read_model_bytes(tar_gz("model_algo-1", zip_stored(list(members.items()))), "m.tar.gz")
    members = dict(service_members("binary_classifier", weights, bias, threshold))
    # the project's old layout: "loss" instead of "loss_type"
    members["additional-params.json"] = b'{"predictor_type": "binary_classifier", "loss": "logistic", "threshold": 0.5}'
    with pytest.raises(ModelArtifactError, match=r"additional-params\.json: loss_type is missing"):
        read_model_bytes(tar_gz("model_algo-1", zip_stored(list(members.items()))), "m.tar.gz")


# ---------------------------------------------------------------- writing: the service's layout, round trip


def _train(predictor_type: str) -> tuple[LinearModel, np.ndarray]:
    loaders = {"binary_classifier": load_breast_cancer, "regressor": load_diabetes, "multiclass_classifier": load_wine}
    features, labels = loaders[predictor_type](return_X_y=True)
    features, labels = features.astype(np.float32), labels.astype(np.float32)
    extra = {"num_classes": "3"} if predictor_type == "multiclass_classifier" else {}
    hp = parse_hyperparameters(
        {"predictor_type": predictor_type, "epochs": "3", "num_models": "4", "mini_batch_size": "64", **extra}
    )
    model = fit(hp, Dataset(features, labels), Dataset(features, labels), LocalCollective(), lambda line: None).model
    return model, features


@pytest.mark.parametrize("predictor_type", list(PREDICTORS))
def test_written_artifact_is_the_services_layout_and_scores_as_trained(predictor_type, tmp_path):
    model, features = _train(predictor_type)
    data = artifact_bytes(model)
    assert artifact_bytes(model) == data  # byte-deterministic
    parts = check_service_layout(data)
    assert parts["additional"]["threshold"] == model.threshold
    np.testing.assert_array_equal(parts["params"]["arg:fc0_weight"], model.weights)
    np.testing.assert_array_equal(parts["params"]["arg:fc0_bias"][0], model.bias)
    path = tmp_path / "model.tar.gz"
    save_model(model, path)
    assert path.read_bytes() == data and not list(tmp_path.glob("*.tmp"))
    loaded = read_model(path, feature_dim=features.shape[1])
    expected_score, expected_label = model.predict(features)
    score, label = loaded.predict(features)
    np.testing.assert_array_equal(score, expected_score)
    if expected_label is None:
        assert label is None
    else:
        np.testing.assert_array_equal(label, expected_label)
    assert loaded.metrics_params == parts["metrics"]


def test_normalisation_is_folded_into_the_weights():
    """wine's features span 0.1 .. 1680: scoring the raw features with the stored weights matches the trainer."""
    model, features = _train("multiclass_classifier")
    params = parse_mxnet_params(artifact_member(artifact_bytes(model), "mx-mod-0000.params"))
    logits = features.astype(np.float64) @ params["arg:fc0_weight"] + params["arg:fc0_bias"]
    assert features.max() > 1000
    np.testing.assert_array_equal(np.argmax(logits, axis=1), model.predict(features)[1])


@pytest.mark.parametrize(
    ("predictor_type", "loss", "used"),
    [
        ("binary_classifier", "hinge_loss", {"margin": 1.0}),
        ("regressor", "quantile_loss", {"quantile": 0.5}),
        (
            "regressor",
            "eps_insensitive_squared_loss",
            {"loss_insensitivity": 0.01, "eps_insensitive_loss_type": "eps_insensitive_squared_loss"},
        ),
    ],
)
def test_other_losses_round_trip_with_their_metrics_params(predictor_type, loss, used):
    features, labels = (load_breast_cancer if predictor_type == "binary_classifier" else load_diabetes)(return_X_y=True)
    features, labels = features.astype(np.float32), labels.astype(np.float32)
    hp = parse_hyperparameters(
        {"predictor_type": predictor_type, "loss": loss, "epochs": "2", "num_models": "2", "mini_batch_size": "64"}
    )
    model = fit(hp, Dataset(features, labels), None, LocalCollective(), lambda line: None).model
    data = artifact_bytes(model)
    loaded = read_model_bytes(data)
    additional = json.loads(artifact_member(data, "additional-params.json"))
    assert additional["loss_type"] == loss
    assert {key: additional["metrics_params"][key] for key in used} == used
    assert all(
        value is None
        for key, value in additional["metrics_params"].items()
        if key in ("quantile", "huber_delta", "margin", "loss_insensitivity", "eps_insensitive_loss_type")
        and key not in used
    )
    for got, expected in zip(loaded.predict(features), model.predict(features), strict=True):
        np.testing.assert_array_equal(got, expected)
    if loss == "hinge_loss":  # the score is the margin, split at the calibrated threshold
        assert loaded.threshold == model.threshold


def artifact_member(data: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        inner = tar.extractfile("model_algo-1").read()
    with zipfile.ZipFile(io.BytesIO(inner)) as archive:
        return archive.read(name)


@pytest.mark.parametrize("module", ["model", "writer", "responses"])
def test_the_model_library_is_container_code_python_3_9_and_numpy_only(module):
    """Evaluate and serving (scikit-learn image, Python 3.9) import it: no 3.10+ syntax, no package beyond numpy (and
    the container library's own modules, container code itself)."""
    import ast
    import sys

    source = (Path(__file__).parents[3] / "containerlib" / "linear_learner" / f"{module}.py").read_text()
    tree = ast.parse(source, feature_version=(3, 9))
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported - set(sys.stdlib_module_names) - {"containerlib"} == {"numpy"}
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "zip"]
    assert all(not any(k.arg == "strict" for k in call.keywords) for call in calls)

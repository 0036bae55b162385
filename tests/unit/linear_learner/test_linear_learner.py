"""The local Linear Learner in-process: hyperparameter validation, quality against scikit-learn on its bundled data
sets, threshold calibration, and the MXNet artifact format checked by an independent parser."""

from __future__ import annotations

import io
import json
import tarfile
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine, make_regression
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV, RidgeCV
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from support.mxnet_oracle import parse_mxnet_params

from containerlib.linear_learner.model import read_model
from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner.artifact import save_model
from pipeline.linear_learner.collective import LocalCollective
from pipeline.linear_learner.final_metrics import evaluate
from pipeline.linear_learner.hyperparameters import HyperparameterError, parse_hyperparameters
from pipeline.linear_learner.metrics import calibrate_thresholds, roc_auc
from pipeline.linear_learner.trainer import Dataset, Optimizer, fit, model_settings


def split(X, y, *, stratify: bool):
    """train / validation / test = 60 / 15 / 25 %, fixed seed."""
    X, y = X.astype(np.float32), y.astype(np.float32)
    X_rest, X_test, y_rest, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0, stratify=y if stratify else None
    )
    X_train, X_val, y_train, y_val = train_test_split(
        X_rest, y_rest, test_size=0.2, random_state=0, stratify=y_rest if stratify else None
    )
    return Dataset(X_train, y_train), Dataset(X_val, y_val), Dataset(X_test, y_test)


def train_and_score(hyperparameters: dict[str, str], train: Dataset, validation: Dataset | None, test: Dataset):
    hp = parse_hyperparameters(hyperparameters)
    lines: list[str] = []
    result = fit(hp, train, validation, LocalCollective(), lines.append)
    assert result.model is not None
    return result, {key: value for _, key, value in evaluate(hp, result.model, test)}, lines


def sklearn_fit(estimator, train: Dataset, validation: Dataset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(
            np.vstack([train.features, validation.features]), np.concatenate([train.labels, validation.labels])
        )


# ---------------------------------------------------------------- hyperparameters


def test_defaults_and_auto_resolution_match_the_service_log():
    hp = parse_hyperparameters({"predictor_type": "binary_classifier"})
    assert (hp.optimizer, hp.learning_rate, hp.wd, hp.l1) == ("adam", 0.1, 1e-4, 0.0)
    assert (hp.lr_scheduler_step, hp.lr_scheduler_factor, hp.lr_scheduler_minimum_lr) == (100, 0.99, 1e-5)
    assert (hp.num_models, hp.mini_batch_size, hp.epochs, hp.loss) == (32, 1000, 15, "logistic")
    assert hp.selection_criteria == "accuracy" and hp.normalize_data and not hp.normalize_label
    regressor = parse_hyperparameters({"predictor_type": "regressor"})
    assert regressor.loss == "squared_loss" and regressor.normalize_label and regressor.unbias_label


def test_strings_are_coerced_as_the_service_does():
    hp = parse_hyperparameters(
        {
            "predictor_type": "multiclass_classifier",
            "num_classes": "5",
            "use_bias": "True",
            "epochs": "7",
            "learning_rate": "0.05",
            "normalize_data": "False",
            "positive_example_weight_mult": "balanced",
            "feature_dim": "12",
            "wd": "auto",
            "binary_classifier_model_selection_criteria": "f1",
        }
    )
    assert hp.num_classes == 5 and hp.use_bias is True and hp.epochs == 7 and hp.learning_rate == 0.05
    assert hp.normalize_data is False and hp.positive_example_weight_mult == "balanced" and hp.feature_dim == 12
    assert hp.selection_criteria == "f_beta" and hp.f_beta == 1.0
    assert hp.explicit >= {"learning_rate", "epochs"} and "wd" not in hp.explicit
    # num_classes is ignored (even when out of range) unless the predictor is multiclass
    assert parse_hyperparameters({"predictor_type": "binary_classifier", "num_classes": "2"}).num_classes == 1


def test_automatic_model_tuning_turns_parallel_models_off():
    hp = parse_hyperparameters(
        {"predictor_type": "regressor", "num_models": "8", "_tuning_objective_metric": "validation:rmse"}
    )
    assert hp.num_models == 1


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"predictor_type": "binary_classifier", "epochs": "0"}, "'epochs' has the invalid value '0': allowed is a"),
        ({"predictor_type": "binary_classifier", "epochs": "ten"}, "'epochs' has the invalid value 'ten'"),
        ({"predictor_type": "binary_classifier", "learning_rate": "-1"}, "allowed is auto or a positive number"),
        ({"predictor_type": "binary_classifier", "optimizer": "lbfgs"}, "allowed is one of auto, sgd, adam, rmsprop"),
        (
            {"predictor_type": "binary_classifier", "loss": "squared_loss"},
            "'loss' has the invalid value 'squared_loss': allowed is auto or one of logistic, hinge_loss",
        ),
        ({"predictor_type": "ranker"}, "'predictor_type' has the invalid value 'ranker'"),
        ({"predictor_type": "multiclass_classifier"}, "'num_classes' is required"),
        ({"predictor_type": "multiclass_classifier", "num_classes": "2"}, "allowed is an integer from 3 to 1,000,000"),
        ({"predictor_type": "binary_classifier", "use_bias": "yes"}, "'use_bias' has the invalid value 'yes'"),
        ({"predictor_type": "binary_classifier", "quantile": "1.5"}, "'quantile' has the invalid value '1.5'"),
        ({"predictor_type": "binary_classifier", "wd": "nan"}, "'wd' has the invalid value 'nan'"),
        ({"predictor_type": "binary_classifier", "learning_rat": "0.1"}, "Unknown hyperparameter(s) 'learning_rat'"),
        ({"epochs": "3"}, "'predictor_type' is required"),
    ],
)
def test_invalid_hyperparameters_name_the_parameter_value_and_what_is_allowed(given, expected):
    with pytest.raises(HyperparameterError) as error:
        parse_hyperparameters(given)
    assert expected in str(error.value)


# ---------------------------------------------------------------- the auto grid and schedule


def test_auto_models_pair_every_strength_with_a_fast_and_a_careful_rate() -> None:
    settings = model_settings(parse_hyperparameters({"predictor_type": "binary_classifier"}), 1.0)
    assert (settings.learning_rate[0], settings.wd[0], settings.l1[0]) == (0.1, 1e-4, 0.0)  # model 0: the base
    np.testing.assert_allclose(settings.learning_rate[1:], np.resize([0.1, 0.03], 31))
    strengths = settings.wd[1::2]  # 16 strengths on an even log grid, each shared by a pair of models
    np.testing.assert_allclose(strengths, np.logspace(-7, -1, 16))
    np.testing.assert_allclose(settings.wd[2::2], strengths[:15])
    given = model_settings(parse_hyperparameters({"predictor_type": "binary_classifier", "wd": "0.01"}), 1.0)
    assert given.wd[0] == 0.01 and np.all((given.wd > 0.003) & (given.wd < 0.033))  # around a given value


def test_auto_schedule_halves_only_the_rates_of_models_that_stalled() -> None:
    hp = parse_hyperparameters({"predictor_type": "multiclass_classifier", "num_classes": "3", "num_models": "3"})
    settings = model_settings(hp, 1.0)
    optimizer = Optimizer(hp, settings, (5, 9), 3)
    params = np.zeros((5, 9), dtype=np.float32)
    for _ in range(250):  # no step schedule: 250 updates leave the rates as they were
        optimizer.step(params, np.ones((5, 9), dtype=np.float32))
    np.testing.assert_allclose(optimizer.column_lr, np.repeat(settings.learning_rate, 3), rtol=1e-6)
    optimizer.plateau(np.array([False, True, False]))
    np.testing.assert_allclose(optimizer.column_lr, np.repeat(settings.learning_rate * [1.0, 0.5, 1.0], 3), rtol=1e-6)
    stepped = parse_hyperparameters(
        {**{"predictor_type": "binary_classifier", "num_models": "2"}, "lr_scheduler_step": "10"}
    )
    fixed = Optimizer(stepped, model_settings(stepped, 1.0), (3, 2), 1)
    fixed.plateau(np.array([True, True]))  # a given schedule is the service's step schedule: no plateau halving
    for _ in range(10):
        fixed.step(np.zeros((3, 2), dtype=np.float32), np.ones((3, 2), dtype=np.float32))
    np.testing.assert_allclose(fixed.column_lr, model_settings(stepped, 1.0).learning_rate * 0.99, rtol=1e-6)


# ---------------------------------------------------------------- quality against scikit-learn


def test_binary_classifier_matches_logistic_regression_cv_on_breast_cancer():
    train, validation, test = split(*load_breast_cancer(return_X_y=True), stratify=True)
    result, metrics, lines = train_and_score(
        {"predictor_type": "binary_classifier", "mini_batch_size": "32", "epochs": "15"}, train, validation, test
    )
    baseline = sklearn_fit(
        make_pipeline(StandardScaler(), LogisticRegressionCV(Cs=5, cv=3, max_iter=5000)), train, validation
    )
    baseline_auc = roc_auc_score(test.labels, baseline.predict_proba(test.features)[:, 1])
    assert metrics["roc_auc_score"] >= baseline_auc - 0.01
    assert metrics["binary_classification_accuracy"] > 0.93
    assert any(
        "#quality_metric: host=algo-1, epoch=0, validation binary_classification_cross_entropy_objective "
        "<loss>=" in line
        for line in lines
    )
    assert any(line.startswith("#throughput_metric: host=algo-1, train throughput=") for line in lines)


@pytest.mark.parametrize(
    ("loader", "hyperparameters"),
    [
        (load_iris, {"mini_batch_size": "8", "epochs": "40"}),
        (load_wine, {"mini_batch_size": "16", "epochs": "20"}),
        (load_digits, {"mini_batch_size": "64", "epochs": "15", "balance_multiclass_weights": "true"}),
    ],
)
def test_multiclass_classifier_matches_multinomial_logistic_regression(loader, hyperparameters):
    X, y = loader(return_X_y=True)
    train, validation, test = split(X, y, stratify=True)
    classes = str(len(np.unique(y)))
    _, metrics, _ = train_and_score(
        {"predictor_type": "multiclass_classifier", "num_classes": classes, **hyperparameters}, train, validation, test
    )
    baseline = sklearn_fit(make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)), train, validation)
    assert metrics["multiclass_accuracy"] >= baseline.score(test.features, test.labels) - 0.01
    assert metrics["multiclass_top_k_accuracy"] >= metrics["multiclass_accuracy"]


@pytest.mark.parametrize("data", ["diabetes", "make_regression"])
def test_regressor_rmse_within_3_percent_of_ridge_cv(data):
    if data == "diabetes":
        X, y = load_diabetes(return_X_y=True)
    else:
        X, y = make_regression(n_samples=2000, n_features=20, noise=10.0, random_state=0)
    train, validation, test = split(X, y, stratify=False)
    _, metrics, _ = train_and_score(
        {"predictor_type": "regressor", "mini_batch_size": "32", "epochs": "15"}, train, validation, test
    )
    baseline = sklearn_fit(RidgeCV(alphas=np.logspace(-3, 3, 13)), train, validation)
    baseline_rmse = float(np.sqrt(np.mean((baseline.predict(test.features) - test.labels) ** 2)))
    assert metrics["rmse"] <= baseline_rmse * 1.03


@pytest.mark.parametrize(
    "loss",
    ["absolute_loss", "huber_loss", "eps_insensitive_squared_loss", "eps_insensitive_absolute_loss", "quantile_loss"],
)
def test_other_regression_losses_train_to_a_useful_model(loss):
    train, validation, test = split(*load_diabetes(return_X_y=True), stratify=False)
    _, metrics, _ = train_and_score(
        {"predictor_type": "regressor", "loss": loss, "mini_batch_size": "32", "epochs": "15", "huber_delta": "10"},
        train,
        validation,
        test,
    )
    baseline = sklearn_fit(RidgeCV(alphas=np.logspace(-3, 3, 13)), train, validation)
    baseline_rmse = float(np.sqrt(np.mean((baseline.predict(test.features) - test.labels) ** 2)))
    assert metrics["rmse"] <= baseline_rmse * 1.10


def test_quantile_loss_moves_predictions_towards_the_quantile():
    X, y = make_regression(n_samples=1500, n_features=5, noise=20.0, random_state=1)
    train, validation, test = split(X, y, stratify=False)
    covered = {}
    for q in ("0.1", "0.9"):
        hp = parse_hyperparameters(
            {
                "predictor_type": "regressor",
                "loss": "quantile_loss",
                "quantile": q,
                "mini_batch_size": "32",
                "epochs": "10",
            }
        )
        model = fit(hp, train, validation, LocalCollective(), lambda line: None).model
        covered[q] = float(np.mean(test.labels > model.predict(test.features)[0]))
    assert covered["0.1"] > 0.75 and covered["0.9"] < 0.25


def test_hinge_loss_sgd_and_rmsprop_and_balanced_weights_train():
    train, validation, test = split(*load_breast_cancer(return_X_y=True), stratify=True)
    for extra in (
        {"loss": "hinge_loss"},
        {"optimizer": "sgd", "momentum": "0.9", "learning_rate": "0.01"},
        {"optimizer": "rmsprop"},
        {"positive_example_weight_mult": "balanced", "l1": "0.001"},
    ):
        _, metrics, _ = train_and_score(
            {"predictor_type": "binary_classifier", "mini_batch_size": "32", "epochs": "8", "num_models": "4", **extra},
            train,
            validation,
            test,
        )
        assert metrics["roc_auc_score"] > 0.98, extra


def test_training_is_reproducible_and_num_models_one_uses_the_given_settings():
    train, validation, _ = split(*load_breast_cancer(return_X_y=True), stratify=True)
    hyperparameters = {
        "predictor_type": "binary_classifier",
        "mini_batch_size": "50",
        "epochs": "3",
        "num_models": "1",
        "learning_rate": "0.02",
    }
    first = fit(parse_hyperparameters(hyperparameters), train, validation, LocalCollective(), lambda line: None)
    lines: list[str] = []
    second = fit(parse_hyperparameters(hyperparameters), train, validation, LocalCollective(), lines.append)
    np.testing.assert_array_equal(first.model.weights, second.model.weights)
    assert any("Selected model #0 (learning_rate=0.02," in line for line in lines)


def test_early_stopping_follows_an_explicit_binary_selection_criterion():
    train, validation, test = split(*load_breast_cancer(return_X_y=True), stratify=True)
    _, metrics, lines = train_and_score(
        {
            "predictor_type": "binary_classifier",
            "mini_batch_size": "32",
            "epochs": "4",
            "num_models": "4",
            "binary_classifier_model_selection_criteria": "recall_at_target_precision",
            "target_precision": "0.95",
        },
        train,
        validation,
        test,
    )
    assert any("criteria=recall_at_target_precision, value=-" in line for line in lines)
    assert metrics["precision"] > 0.9


def test_training_without_validation_selects_on_train_and_early_stops():
    train, _, test = split(*load_breast_cancer(return_X_y=True), stratify=True)
    result, metrics, lines = train_and_score(
        {
            "predictor_type": "binary_classifier",
            "mini_batch_size": "32",
            "epochs": "50",
            "early_stopping_patience": "1",
            "early_stopping_tolerance": "0.5",
        },
        train,
        None,
        test,
    )
    assert result.epochs < 50 and any("Early stop condition met" in line for line in lines)
    assert metrics["roc_auc_score"] > 0.97


# ---------------------------------------------------------------- metrics and calibration


def test_roc_auc_matches_scikit_learn_with_ties():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 500)
    scores = np.round(rng.random(500) + labels * 0.3, 1)  # many ties
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))


@pytest.mark.parametrize("criteria", ["accuracy", "f_beta", "precision_at_target_recall", "recall_at_target_precision"])
def test_calibrated_threshold_is_the_best_by_brute_force(criteria):
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 300).astype(float)
    scores = np.column_stack([rng.random(300) * 0.6 + labels * 0.4, rng.random(300)])
    thresholds, values = calibrate_thresholds(
        labels, scores, criteria, beta=1.0, target_precision=0.8, target_recall=0.8, default_threshold=0.5
    )

    def value(column, threshold):
        predicted = scores[:, column] > threshold
        tp = np.sum(predicted & (labels == 1))
        precision = tp / max(predicted.sum(), 1) if predicted.sum() else 1.0
        recall = tp / labels.sum()
        if criteria == "accuracy":
            return np.mean(predicted == (labels == 1))
        if criteria == "f_beta":
            return 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if criteria == "precision_at_target_recall":
            return precision if recall >= 0.8 else recall - 1
        return recall if precision >= 0.8 else precision - 1

    for column in range(2):
        candidates = np.concatenate([[-1.0], np.unique(scores[:, column])])
        best = max(value(column, t) for t in candidates)
        assert values[column] == pytest.approx(best)
        assert value(column, thresholds[column]) == pytest.approx(best)


# ---------------------------------------------------------------- artifact


def test_artifact_layout_params_format_and_folded_normalisation(tmp_path):
    X, y = load_wine(return_X_y=True)
    train, validation, test = split(X, y, stratify=True)
    hp = parse_hyperparameters(
        {"predictor_type": "multiclass_classifier", "num_classes": "3", "mini_batch_size": "16", "epochs": "5"}
    )
    model = fit(hp, train, validation, LocalCollective(), lambda line: None).model
    path = tmp_path / "model.tar.gz"
    save_model(model, path)
    with tarfile.open(path) as tar:
        assert tar.getnames() == ["model_algo-1"]
        inner = tar.extractfile("model_algo-1").read()
    with zipfile.ZipFile(io.BytesIO(inner)) as archive:
        assert archive.namelist() == [
            "manifest.json",
            "additional-params.json",
            "mx-mod-symbol.json",
            "mx-mod-0000.params",
        ]
        params = parse_mxnet_params(archive.read("mx-mod-0000.params"))
        symbol = json.loads(archive.read("mx-mod-symbol.json"))
        additional = json.loads(archive.read("additional-params.json"))
    assert params["arg:fc0_weight"].shape == (13, 3) and params["arg:fc0_bias"].shape == (1, 3)
    assert len(symbol["nodes"]) == 24 and symbol["nodes"][1]["attrs"]["__shape__"] == "(13, 3)"
    assert additional["predictor_type"] == "multiclass_classifier" and additional["loss_type"] == "softmax_loss"
    # raw features straight through the stored weights give the trained model's predictions (wine is unscaled)
    logits = test.features.astype(np.float64) @ params["arg:fc0_weight"] + params["arg:fc0_bias"]
    np.testing.assert_array_equal(np.argmax(logits, axis=1), model.predict(test.features)[1])
    loaded = read_model(path)
    np.testing.assert_array_equal(loaded.predict(test.features)[0], model.predict(test.features)[0])


# ---------------------------------------------------------------- channel data


def test_sparse_recordio_channel_trains_without_mean_shift(tmp_path):
    import scipy.sparse as sp

    from containerlib.recordio import write_sparse
    from pipeline.linear_learner.data import read_channel

    train, validation, test = split(*load_breast_cancer(return_X_y=True), stratify=True)
    path = tmp_path / "train.pbr"
    with path.open("wb") as stream:
        write_sparse(stream, sp.csr_matrix(train.features), train.labels)
    sparse_train = read_channel(
        "train",
        [path],
        "application/x-recordio-protobuf",
        feature_dim=30,
        predictor_type="binary_classifier",
        num_classes=1,
    )
    assert sp.issparse(sparse_train.features)
    np.testing.assert_array_equal(sparse_train.features.toarray(), train.features)
    _, metrics, _ = train_and_score(
        {"predictor_type": "binary_classifier", "mini_batch_size": "32", "epochs": "10", "num_models": "8"},
        sparse_train,
        validation,
        test,
    )
    assert metrics["roc_auc_score"] > 0.96  # uncentred sparse features converge slower under the per-epoch decay


@pytest.mark.parametrize(
    ("content", "options", "expected"),
    [
        ("1,0.5,2\n2,0.1,3\n", {}, "record 1 (0-based) has label 2.0; expected 0 or 1 for a binary_classifier"),
        ("1,0.5,2\n0,nan,3\n", {}, "row 2, column 2 is 'nan'; expected a finite number"),
        ("1,0.5,2\n0,0.1\n", {}, "row 2, column 3 is ''; expected a finite number"),
        ("1,0.5,2\n0,0.1,3\n", {"feature_dim": 3}, "records have 2 features; expected 3 (from feature_dim)"),
        ("", {}, "the CSV file is empty"),
        (
            "1.5,0.5,2\n",
            {"predictor_type": "multiclass_classifier", "num_classes": 3},
            "label 1.5; expected an integer from 0 to 2",
        ),
    ],
)
def test_bad_csv_channels_name_the_file_record_and_expectation(tmp_path, content, options, expected):
    from pipeline.linear_learner.data import read_channel

    path = tmp_path / "part.csv"
    path.write_text(content)
    settings = {"feature_dim": None, "predictor_type": "binary_classifier", "num_classes": 1, **options}
    with pytest.raises(AlgorithmInputError) as error:
        read_channel("train", [path], "text/csv", **settings)
    assert str(error.value).startswith(str(path)) and expected in str(error.value)


def test_truncated_recordio_names_the_file(tmp_path):
    from containerlib.recordio import write_dense
    from pipeline.linear_learner.data import read_channel

    path = tmp_path / "bad.pbr"
    with path.open("wb") as stream:
        write_dense(stream, np.ones((5, 3), dtype=np.float32), np.ones(5, dtype=np.float32))
    path.write_bytes(path.read_bytes()[:-9])
    with pytest.raises(AlgorithmInputError, match="bad.pbr"):
        read_channel(
            "train",
            [path],
            "application/x-recordio-protobuf",
            feature_dim=None,
            predictor_type="binary_classifier",
            num_classes=1,
        )

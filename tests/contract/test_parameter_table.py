"""The parameter table is the one description of the pipeline parameters: the definition declares exactly its rows,
each row's feeds are where the definition really passes it, the override checks and the local preflight read it,
and the committed reference is the one it renders."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pipeline import cli
from pipeline.api.parameters import hyperparameter_rules, parameter_reference, parameter_rows
from pipeline.core.errors import ParameterError
from pipeline.definition.build import build_definition
from pipeline.definition.config import PipelineConfig
from pipeline.definition.parameter_table import BY_NAME, PARAMETER_TYPES, TABLE, Range
from pipeline.definition.parameters import check_overrides, resolve_parameters
from pipeline.local import preflight
from pipeline.local.plan import Plan, plan

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "parameters.md"
CONFIG = PipelineConfig(bucket="table-bucket", pipeline_name="table-pipeline")


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    return json.loads(build_definition(CONFIG).definition_json)


@pytest.fixture(scope="module")
def checked(definition: dict[str, Any]) -> Plan:
    return plan(definition, {"Processing", "Training", "Model", "Transform", "RegisterModel", "QualityCheck"})


def reads(value: Any, name: str) -> bool:
    """Whether a JSON value of the definition reads ``Parameters.<name>``."""
    return name in preflight.parameters_in(value)


def steps_by_name(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}

    def visit(steps: list[dict[str, Any]]) -> None:
        for step in steps:
            found[step["Name"]] = step
            if step["Type"] == "Condition":
                visit(step["Arguments"]["IfSteps"] + step["Arguments"]["ElseSteps"])

    visit(definition["Steps"])
    return found


def test_the_definition_declares_exactly_the_table_in_its_order(definition: dict[str, Any]) -> None:
    declared = [
        {"Name": row.name, "Type": row.type, "DefaultValue": row.default_for(CONFIG)}
        | ({"EnumValues": list(row.enum)} if row.enum else {})
        for row in TABLE
    ]
    assert definition["Parameters"] == declared
    assert definition["Parameters"][0]["DefaultValue"] == "s3://table-bucket/table-pipeline/input/"
    assert BY_NAME["SchemaUrl"].default_for(CONFIG).startswith("s3://table-bucket/table-pipeline/schemas/")


def test_each_row_is_consistent() -> None:
    """Names and step attributes unique; a known type; every default among its values and inside its range."""
    assert len({row.name for row in TABLE}) == len({row.attribute for row in TABLE}) == len(TABLE)
    for row in TABLE:
        default = row.default_for(CONFIG)
        assert row.type in PARAMETER_TYPES, row.name
        assert not row.enum or default in row.enum, row.name
        assert row.range is None or (row.type in ("Integer", "Float") and row.range.contains(default)), row.name
        assert row.help and "\n" not in row.help, row.name
    assert BY_NAME["InputDataUrl"].attribute == "input_data_url" and BY_NAME["L1"].attribute == "l1"


def test_every_feed_is_where_the_definition_passes_the_parameter(definition: dict[str, Any]) -> None:
    steps = steps_by_name(definition)
    for row in TABLE:
        assert row.feeds, f"{row.name} feeds nothing"
        for feed in row.feeds:
            step = steps[feed.step]
            where = f"{row.name} -> {feed.describe()}"
            if feed.kind == "hyperparameter":
                assert reads(step["Arguments"]["HyperParameters"][feed.target], row.name), where
            elif feed.kind == "argument":
                arguments = step["Arguments"]["AppSpecification"]["ContainerArguments"]
                at = [
                    i
                    for i, item in enumerate(arguments)
                    if reads(item, row.name)
                    and (arguments[i - 1] == feed.target or json.dumps(item).find(f'"{feed.target}="') >= 0)
                ]
                assert at, where
            else:
                assert reads(_under(step, feed.target), row.name), where


def test_every_use_of_a_parameter_in_the_definition_is_a_feed_of_its_row(definition: dict[str, Any]) -> None:
    """The other way round: a step reading a parameter its row does not name (the preflight would not check a
    hyperparameter fed that way) is caught."""
    for name, step in steps_by_name(definition).items():
        own = {key: value for key, value in step.items() if key != "Arguments"}
        own["Arguments"] = {k: v for k, v in step.get("Arguments", {}).items() if k not in ("IfSteps", "ElseSteps")}
        for parameter in preflight.parameters_in(own):
            assert name in {feed.step for feed in BY_NAME[parameter].feeds}, f"{name} reads {parameter}"
    hyperparameters = steps_by_name(definition)["Train"]["Arguments"]["HyperParameters"]
    fed = {key: preflight.parameters_in(value) for key, value in hyperparameters.items()}
    assert fed == {row.hyperparameter: {row.name} for row in TABLE if row.hyperparameter}


def _under(value: Any, key: str) -> list[Any]:
    """Every value of the JSON ``value`` under a key named ``key``, at any depth."""
    if isinstance(value, dict):
        return [v for k, v in value.items() if k == key] + [x for v in value.values() for x in _under(v, key)]
    if isinstance(value, list):
        return [x for v in value for x in _under(v, key)]
    return []


def test_a_feed_check_that_cannot_fail_would_be_caught(definition: dict[str, Any]) -> None:
    """The feed check above tells a wrong feed from a right one."""
    steps = steps_by_name(definition)
    assert reads(_under(steps["Train"], "InstanceCount"), "TrainingInstanceCount")
    assert not reads(_under(steps["Train"], "InstanceCount"), "ProcessingInstanceCount")
    assert not reads(steps["Train"]["Arguments"]["HyperParameters"]["epochs"], "MiniBatchSize")


def test_the_committed_reference_is_the_rendered_one_and_lists_every_declared_parameter(
    definition: dict[str, Any],
) -> None:
    text = REFERENCE.read_text()
    assert text == parameter_reference(), "regenerate: python -m pipeline.api.parameters > docs/reference/parameters.md"
    listed = [line.split("`")[1] for line in text.splitlines() if line.startswith("| `")]
    assert listed == [parameter["Name"] for parameter in definition["Parameters"]]
    assert "| `Epochs` | Integer | `15` | a positive integer | passes over the training data |" in text
    assert "| `TrainingInstanceType` | String | `ml.m5.xlarge` | any text |" in text
    assert "| `InputDataUrl` | String | `s3://<bucket>/<pipeline>/input/` |" in text
    assert "| `DataVersion` | String | empty |" in text


def test_hyperparameter_rules_are_the_parsers_own_words() -> None:
    rules = hyperparameter_rules()
    assert rules["epochs"] == "a positive integer"
    assert rules["learning_rate"] == "auto or a positive number"
    assert rules["num_classes"] == "an integer from 3 to 1,000,000"
    assert rules["use_bias"] == "true or false"
    assert all(rules[row.hyperparameter] for row in TABLE if row.hyperparameter)


def test_llpipe_definition_params_prints_the_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    assert cli.main(["definition", "--params", "--bucket", "table-bucket", "--pipeline-name", "table-pipeline"]) == 0
    out = capsys.readouterr().out
    lines = {
        line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
        for line in out.splitlines()
        if line.startswith("│") and line.split("│")[1].strip()
    }
    assert list(lines) == [row.name for row in TABLE]
    assert lines["Epochs"] == ["Integer", "15", "a positive integer", "passes over the training data"]
    assert lines["InputDataUrl"][1] == "s3://table-bucket/table-pipeline/input/"
    assert lines["HashBuckets"][2] == "at least 0 and at most 65,536"
    assert lines["PredictorType"][2] == "binary_classifier, multiclass_classifier, regressor"
    assert parameter_rows(CONFIG)[0]["default"] == "s3://table-bucket/table-pipeline/input/"


# --------------------------------------------------------------------------------------------- checks from the table


def test_ranges_come_from_the_table(definition: dict[str, Any]) -> None:
    declared = definition["Parameters"]
    with pytest.raises(ParameterError) as caught:
        check_overrides(declared, {"HashBuckets": "-1"})
    assert str(caught.value).startswith(
        "parameter HashBuckets=-1: expected at least 0 and at most 65,536, 0: each text column one-hot or hashed"
    )
    with pytest.raises(ParameterError, match=r"parameter ChampionTolerance=-0\.5: expected at least 0, how much"):
        check_overrides(declared, {"ChampionTolerance": "-0.5"})
    assert check_overrides(declared, {"HashBuckets": "65536"}) == {"HashBuckets": 65536}
    assert Range(0, 1, closed=False).contains(0.5) and not Range(0, 1, closed=False).contains(0)
    assert not Range(1).contains(math.nan) and Range(1).contains(10**9)


def test_a_parameter_without_a_default_is_named_without_a_flag() -> None:
    without_default = [{"Name": "Epochs", "Type": "Integer"}]
    with pytest.raises(ParameterError) as caught:
        resolve_parameters(without_default, {})
    assert str(caught.value) == "parameter Epochs has no default value: give it a value"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"Epochs": "0"},
            "parameter Epochs=0: expected a positive integer (it is Linear Learner's hyperparameter epochs)",
        ),
        (
            {"LearningRate": "-1"},
            "parameter LearningRate=-1: expected auto or a positive number "
            "(it is Linear Learner's hyperparameter learning_rate)",
        ),
        (
            {"PositiveExampleWeightMult": "heavy"},
            "parameter PositiveExampleWeightMult=heavy: expected auto or balanced or a positive number "
            "(it is Linear Learner's hyperparameter positive_example_weight_mult)",
        ),
        (
            {"PredictorType": "multiclass_classifier", "NumClasses": "2"},
            "parameter NumClasses=2: expected an integer from 3 to 1,000,000 "
            "(it is Linear Learner's hyperparameter num_classes)",
        ),
        (
            {"Loss": "softmax_loss"},
            "parameter Loss=softmax_loss: the Train step would reject it: Hyperparameter 'loss' has the invalid value "
            "'softmax_loss': allowed is auto or one of logistic, hinge_loss when predictor_type is binary_classifier",
        ),
    ],
)
def test_the_preflight_checks_a_parameter_with_its_hyperparameter_s_rule(
    definition: dict[str, Any], checked: Plan, override: dict[str, str], message: str
) -> None:
    values = resolve_parameters(definition["Parameters"], override)
    with pytest.raises(ParameterError) as caught:
        preflight.check_parameters(checked, values)
    assert str(caught.value) == message


def test_the_preflight_passes_what_the_train_step_accepts(definition: dict[str, Any], checked: Plan) -> None:
    """NumClasses is ignored unless multiclass, as the service ignores num_classes; the defaults all pass."""
    preflight.check_parameters(checked, resolve_parameters(definition["Parameters"], {}))
    preflight.check_parameters(checked, resolve_parameters(definition["Parameters"], {"NumClasses": "2"}))
    fine = {"Epochs": "1", "LearningRate": "0.5", "Wd": "0", "NumModels": "4", "PositiveExampleWeightMult": "balanced"}
    preflight.check_parameters(checked, resolve_parameters(definition["Parameters"], fine))


def test_the_preflight_checks_the_tuning_step_s_static_hyperparameters_and_the_defaults_train() -> None:
    """Under tuning, Epochs is static (checked); LearningRate is tuned, and still checked, as the untuned defaults'
    Train step beside the tuning job passes it."""
    tuned = json.loads(build_definition(PipelineConfig(tuning_max_jobs=2)).definition_json)
    kinds = {"Processing", "Tuning", "Training", "Model", "Transform", "RegisterModel", "QualityCheck"}
    checked = plan(tuned, kinds)
    with pytest.raises(ParameterError, match=r"^parameter Epochs=0: expected a positive integer"):
        preflight.check_parameters(checked, resolve_parameters(tuned["Parameters"], {"Epochs": "0"}))
    with pytest.raises(ParameterError, match=r"^parameter LearningRate=-1"):
        preflight.check_parameters(checked, resolve_parameters(tuned["Parameters"], {"LearningRate": "-1"}))


def test_llpipe_definition_params_at_80_columns_prints_a_block_per_parameter(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["definition", "--params"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    headings = [line.split()[0] for line in lines if line and not line.startswith(" ") and "--param" not in line]
    assert headings == [row.name for row in TABLE]
    epochs = lines.index(next(line for line in lines if line.startswith("Epochs ")))
    assert lines[epochs] == "Epochs  Integer, default 15"
    assert lines[epochs + 1] == "  passes over the training data; allowed: a positive integer"

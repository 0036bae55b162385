"""What SageMaker would refuse is refused before anything runs, from botocore's model of the SageMaker API: every
request field the definition fills from a parameter (instance types outside their job type's enum, counts and
volumes out of bounds, container arguments over 256 characters, S3 URIs off the pattern) and every value over the
1,024 characters of a pipeline parameter. ``llpipe run`` accepted all of these ("what passes locally is what
deploys")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.aws_stubs import StubbedSession

from pipeline import cli
from pipeline.core.errors import ParameterError
from pipeline.definition.build import build_definition
from pipeline.definition.config import load_config
from pipeline.definition.parameters import resolve_parameters
from pipeline.definition.service_limits import check_service_limits, definition_steps
from pipeline.sagemaker import start

CONFIG = load_config(env={})


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    return json.loads(build_definition(CONFIG).definition_json)


def check(definition: dict[str, Any], **overrides: str) -> None:
    values = resolve_parameters(definition["Parameters"], overrides)
    check_service_limits(definition_steps(definition), values)


def test_the_defaults_and_every_instance_type_of_its_enum_pass(definition: dict[str, Any]) -> None:
    check(definition)
    check(definition, ProcessingInstanceType="ml.c5.9xlarge", TrainingInstanceType="ml.p3.2xlarge",
          TransformInstanceType="ml.c5.xlarge", EvaluationInstanceType="ml.r5.large")  # fmt: skip


@pytest.mark.parametrize(
    ("parameter", "value", "field", "allowed"),
    [
        ("ProcessingInstanceType", "ml.m5.huge", "Preprocess's CreateProcessingJob field "
         "ProcessingResources.ClusterConfig.InstanceType", "ProcessingInstanceType (the nearest: ml.m5.large"),
        ("TrainingInstanceType", "ml.m5.xlarge ", "Train's CreateTrainingJob field ResourceConfig.InstanceType",
         "values of its shape TrainingInstanceType"),
        ("TransformInstanceType", "m5.large", "Transform's CreateTransformJob field TransformResources.InstanceType",
         "TransformInstanceType (the nearest: ml.m5.large"),
        ("EvaluationInstanceType", "ml.t2.nano", "Evaluate's CreateProcessingJob field "
         "ProcessingResources.ClusterConfig.InstanceType", "ProcessingInstanceType"),
    ],
)  # fmt: skip
def test_an_instance_type_outside_the_services_enum_names_parameter_field_and_nearest(
    definition: dict[str, Any], parameter: str, value: str, field: str, allowed: str
) -> None:
    with pytest.raises(ParameterError) as error:
        check(definition, **{parameter: value})
    message = str(error.value)
    assert f"{parameter}={value}" in message and f"SageMaker would refuse it as {field}" in message
    assert allowed in message


@pytest.mark.parametrize(("parameter", "length"), [("IdColumn", 1025), ("LabelValues", 5000), ("Loss", 1100)])
def test_a_value_over_1024_characters_is_refused_whatever_it_feeds(
    definition: dict[str, Any], parameter: str, length: int
) -> None:
    with pytest.raises(ParameterError, match=rf"a pipeline parameter value \(StartPipelineExecution\): {length:,} "
                       "characters where the service takes at most 1,024"):  # fmt: skip
        check(definition, **{parameter: "x" * length})


@pytest.mark.parametrize(
    ("parameter", "value", "sent"), [("IdColumn", "i" * 300, 312), ("LabelValues", "a,b" * 80, 255)]
)
def test_a_container_argument_over_256_characters_is_refused(
    definition: dict[str, Any], parameter: str, value: str, sent: int
) -> None:
    if sent <= 256:
        check(definition, **{parameter: value})  # the flag and the value fit: accepted
        return
    with pytest.raises(ParameterError, match=rf"field AppSpecification\.ContainerArguments\.\d+: {sent} characters "
                       "where the service takes at most 256"):  # fmt: skip
        check(definition, **{parameter: value})


@pytest.mark.parametrize("url", ["ftp://bucket/data/", "s3:/bucket/data", "bucket/data"])
def test_an_s3_uri_off_the_services_pattern_is_refused(definition: dict[str, Any], url: str) -> None:
    with pytest.raises(ParameterError, match=r"ProcessingInputs\.0\.S3Input\.S3Uri: does not match the service's "):
        check(definition, InputDataUrl=url)


def test_llpipe_run_refuses_before_anything_is_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "t.csv"
    data.write_text("x,y\n" + "".join(f"{i},{i % 2}\n" for i in range(100)))
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "y",
            "--predictor-type", "binary_classifier", "--param", "TrainingInstanceType=ml.m5.gigantic"]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--param TrainingInstanceType=ml.m5.gigantic: SageMaker would refuse it" in err and "Traceback" not in err
    assert not (tmp_path / "w" / "executions").exists()


def test_start_refuses_before_any_request(definition: dict[str, Any]) -> None:
    session = StubbedSession("sagemaker", "s3")  # no response queued: any call would fail the test
    with pytest.raises(ParameterError, match="TransformInstanceType=ml.x1.big: SageMaker would refuse it"):
        start.start_request(CONFIG, {"DataVersion": "v1", "TransformInstanceType": "ml.x1.big"}, session,
                            definition=definition)  # fmt: skip
    session.verify()


@pytest.mark.parametrize(("count", "refused"), [(100, False), (101, True), (250, True)])
def test_a_count_over_the_services_bound_is_refused(definition: dict[str, Any], count: int, refused: bool) -> None:
    if not refused:
        check(definition, ProcessingInstanceCount=str(count))
        return
    with pytest.raises(ParameterError, match=rf"ProcessingInstanceCount={count}: SageMaker would refuse it as "
                       r"Preprocess's CreateProcessingJob field ProcessingResources\.ClusterConfig\.InstanceCount: "
                       "expected at most 100"):  # fmt: skip
        check(definition, ProcessingInstanceCount=str(count))


def test_a_pass_is_kept_and_a_refusal_is_checked_again(
    definition: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that checked these steps and values against this botocore before passes without parsing its model; a
    refused value leaves nothing, so it is refused (with the same message) every time."""
    from pipeline.definition import service_limits

    monkeypatch.setenv("LLPIPE_CACHE_DIR", str(tmp_path))
    values = resolve_parameters(definition["Parameters"], {})
    check_service_limits(definition_steps(definition), values)
    (marker,) = (tmp_path / "service-limits").iterdir()
    assert marker == service_limits.passed_before(definition_steps(definition), values)
    other = resolve_parameters(definition["Parameters"], {"ProcessingInstanceType": "ml.c5.9xlarge"})
    assert service_limits.passed_before(definition_steps(definition), other) != marker

    def unparsed() -> Any:
        raise AssertionError("the model was parsed for a check that passed before")

    monkeypatch.setattr(service_limits, "service_model", unparsed)
    check_service_limits(definition_steps(definition), values)
    monkeypatch.undo()
    monkeypatch.setenv("LLPIPE_CACHE_DIR", str(tmp_path))
    refused = resolve_parameters(definition["Parameters"], {"TransformInstanceType": "m5.large"})
    messages = []
    for _ in range(2):
        with pytest.raises(ParameterError) as error:
            check_service_limits(definition_steps(definition), refused)
        messages.append(str(error.value))
    assert messages[0] == messages[1] and "TransformInstanceType (the nearest: ml.m5.large" in messages[0]
    assert list((tmp_path / "service-limits").iterdir()) == [marker]

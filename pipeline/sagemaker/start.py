"""Start an execution of the deployed pipeline (selective, with a parallelism limit), retry or stop one.

Unlike the SDK's ``start``, the request adds DataVersion, the fingerprint of the objects under InputDataUrl, so
that new data is never answered from the step cache.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pipeline.core.data_version import PARAMETER as DATA_VERSION
from pipeline.core.data_version import fingerprint, s3_listing
from pipeline.core.errors import ParameterError, opt
from pipeline.core.s3_listing import list_objects
from pipeline.core.steps import upstream_steps, walk_steps
from pipeline.definition.config import PipelineConfig
from pipeline.definition.parameters import check_overrides
from pipeline.definition.service_limits import check_definition
from pipeline.sagemaker import aws


def deployed_definition(config: PipelineConfig, session: Any = None) -> dict[str, Any]:
    """The pipeline definition as deployed (DescribePipeline)."""
    session = session or aws.session(config)
    with aws.call(f"DescribePipeline {config.pipeline_name}"):
        response = session.client("sagemaker").describe_pipeline(PipelineName=config.pipeline_name)
    return json.loads(response["PipelineDefinition"])


def deployed_parameters(config: PipelineConfig, session: Any = None) -> dict[str, dict[str, Any]]:
    """The parameters of the pipeline as deployed (DescribePipeline): name -> declaration."""
    return declared_parameters(deployed_definition(config, session))


def declared_parameters(definition: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {parameter["Name"]: parameter for parameter in definition.get("Parameters", [])}


def steps_from(definition: Mapping[str, Any], first: str) -> list[str]:
    """``first`` and every step downstream of it, in definition order: what a selective execution from it runs.

    A step depends on the steps in its ``DependsOn``, the steps whose properties it reads (``{"Get": "Steps.X..."}``,
    property files included) and, inside a Condition's branches, on the Condition.
    """
    dependencies = {
        step["Name"]: upstream_steps(step) | ({branch[0]} if branch else set())
        for step, branch in walk_steps(list(definition.get("Steps", [])))
    }
    if first not in dependencies:
        raise ParameterError(
            f"the pipeline has no such step; it has {', '.join(dependencies)}", option="from_step", value=first
        )
    selected = {first}
    changed = True
    while changed:
        changed = False
        for name, needs in dependencies.items():
            if name not in selected and needs & selected:
                selected.add(name)
                changed = True
    return [name for name in dependencies if name in selected]


def start_request(
    config: PipelineConfig,
    parameters: Mapping[str, str] | None = None,
    session: Any = None,
    display_name: str | None = None,
    from_step: str | None = None,
    source_arn: str | None = None,
    max_parallel: int | None = None,
    definition: Mapping[str, Any] | None = None,
    uploads_schema: bool = False,
) -> dict[str, Any]:
    """The StartPipelineExecution request, built with reads only: DescribePipeline (unless ``definition``, the
    deployed one, was read already), the given ``SchemaUrl``'s object (:func:`check_schema_url`), then ListObjectsV2.

    Overrides are checked against the deployed definition. Unless ``DataVersion`` is given, it is the fingerprint
    of the objects under ``InputDataUrl`` (the override, else the deployed default), so new data is a new cache key.
    A pipeline deployed before DataVersion existed gets no DataVersion (see :func:`missing_data_version`).
    ``from_step`` with ``source_arn``: a selective execution running that step and everything downstream of it,
    the other steps' outputs taken from the source execution. ``max_parallel``: ParallelismConfiguration. With an
    MLflow ARN configured, ``MlflowExperimentName`` names the execution's experiment (``mlflow_experiment``, else
    the pipeline's name). ``uploads_schema``: the ``SchemaUrl`` passed is the caller's inferred schema, uploaded after
    this request is built, so it is not read.
    """
    session = session or aws.session(config)
    definition = definition or deployed_definition(config, session)
    declared = declared_parameters(definition)
    parameters = dict(parameters or {})
    check_overrides(list(declared.values()), parameters)
    if not uploads_schema:
        check_schema_url(session, declared, parameters)
    if DATA_VERSION in declared and DATA_VERSION not in parameters:
        url = parameters.get("InputDataUrl") or str(declared.get("InputDataUrl", {}).get("DefaultValue", ""))
        with aws.call(f"ListObjectsV2 {url} (for DataVersion; or pass {opt(DATA_VERSION, '...')})"):
            listing = s3_listing(session.client("s3"), url)
        parameters.update(sized_from_listing(declared, parameters, listing))
        parameters[DATA_VERSION] = fingerprint(listing)
    # what the service would refuse (an instance type outside its enum, a value over 1,024 characters), said now
    check_definition(definition, parameters)
    request: dict[str, Any] = {"PipelineName": config.pipeline_name}
    if parameters:
        request["PipelineParameters"] = [{"Name": name, "Value": str(value)} for name, value in parameters.items()]
    if display_name:
        request["PipelineExecutionDisplayName"] = display_name
    if from_step:
        request["SelectiveExecutionConfig"] = {
            "SourcePipelineExecutionArn": source_arn,
            "SelectedSteps": [{"StepName": name} for name in steps_from(definition, from_step)],
        }
    if max_parallel is not None:
        request["ParallelismConfiguration"] = {"MaxParallelExecutionSteps": max_parallel}
    if config.mlflow_arn:  # the execution's own experiment, whatever the deployed definition's default says
        request["MlflowExperimentName"] = config.experiment_name
    return request


def check_schema_url(session: Any, declared: Mapping[str, dict[str, Any]], given: Mapping[str, str]) -> None:
    """A user-given ``SchemaUrl`` read as Preprocess will read it (``pipeline.definition.schema_url``), before the
    execution starts: ListObjectsV2 of the URI as a prefix, then GetObject of its one ``.json``. Nothing is read
    when ``SchemaUrl`` is not given or the deployed pipeline does not declare it."""
    from containerlib.s3_uri import split_s3_uri
    from pipeline.definition.parameters import resolve_parameters
    from pipeline.definition.schema_url import MAX_BYTES, check_schema_objects, refusal

    uri = given.get("SchemaUrl")
    if not uri or "SchemaUrl" not in declared:
        return
    try:
        bucket, prefix = split_s3_uri(uri)
    except ValueError:
        raise refusal(uri, "not an S3 URI (expected s3://bucket/key)") from None
    client = session.client("s3")
    with aws.call(f"ListObjectsV2 {uri} (SchemaUrl)"):
        objects = list_objects(client, bucket, prefix)
        sizes = {item["Key"]: item["Size"] for item in objects if item["Key"].endswith(".json")}

    def read_text(key: str) -> str:
        if sizes[key] > MAX_BYTES:
            raise ValueError(f"s3://{bucket}/{key} is {sizes[key]:,} bytes, not a schema")
        with aws.call(f"GetObject s3://{bucket}/{key} (SchemaUrl)"):
            return client.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")

    values = resolve_parameters(list(declared.values()), dict(given))
    where = f"in S3 (ListObjectsV2 of s3://{bucket}/{prefix})"
    check_schema_objects(
        uri, sorted(sizes), read_text, str(values["LabelColumn"]), str(values["PredictorType"]), None, where
    )


def sized_from_listing(
    declared: Mapping[str, dict[str, Any]], given: Mapping[str, str], listing: list[tuple[str, int, str]]
) -> dict[str, str]:
    """The instance counts and volumes the listed input needs (``pipeline.core.sizing``), as parameters to send: only
    those the user did not give and whose value differs from the deployed default. A given volume too small for the
    data raises ``ParameterError`` before anything starts."""
    from pipeline.core.sizing import InputData, plan_sizes, sized_parameters
    from pipeline.definition.parameters import resolve_parameters

    values = resolve_parameters(list(declared.values()), dict(given))
    plan = plan_sizes(InputData(tuple((key, size) for key, size, _ in listing)), values, set(given))
    sized = sized_parameters(plan, values, set(given))
    return {name: str(value) for name, value in sized.items() if value != values.get(name)}


def missing_data_version(request: Mapping[str, Any]) -> bool:
    """True when a StartPipelineExecution request sets no DataVersion (the deployed pipeline predates it)."""
    return all(parameter["Name"] != DATA_VERSION for parameter in request.get("PipelineParameters", []))


def scaling_warnings(
    definition: Mapping[str, Any], request: Mapping[str, Any], sample: Mapping[str, Any] | None
) -> list[str]:
    """What ``llpipe start`` warns of before starting, as ``llpipe run`` does (``run_preflight_warnings``):
    TrainingInstanceCount against the train shards Preprocess will write and MiniBatchSize against the train records
    one training host will see. The data is what the schema inference read (``sample``, its ``describe()``): the
    data objects ListObjectsV2 listed, and their rows when every object was read whole (fewer rows than the
    per-file cap in all); no further request is sent. Nothing without a sample (inference off, SchemaUrl given)."""
    from pipeline.core.scaling import run_preflight_warnings
    from pipeline.definition.parameters import resolve_parameters

    if not sample or not sample.get("files_total"):
        return []
    given = {parameter["Name"]: parameter["Value"] for parameter in request.get("PipelineParameters", [])}
    try:
        values = resolve_parameters(list(definition.get("Parameters", [])), given)
    except ParameterError:  # a parameter without default and value: the service names it, not this preflight
        return []
    whole = sample.get("files_sampled") == sample["files_total"] and sample["rows"] < sample["rows_per_file"]
    return run_preflight_warnings(values, int(sample["files_total"]), int(sample["rows"]) if whole else None)


def start(
    config: PipelineConfig,
    parameters: Mapping[str, str] | None = None,
    session: Any = None,
    display_name: str | None = None,
    request: Mapping[str, Any] | None = None,
) -> str:
    """StartPipelineExecution of :func:`start_request` (or of ``request``, already built); returns the ARN."""
    session = session or aws.session(config)
    request = request or start_request(config, parameters, session, display_name)
    with aws.call(f"StartPipelineExecution {config.pipeline_name}"):
        return session.client("sagemaker").start_pipeline_execution(**request)["PipelineExecutionArn"]


def retry(config: PipelineConfig, arn: str, max_parallel: int | None = None, session: Any = None) -> str:
    """RetryPipelineExecution: re-run the failed steps of a failed execution (same ARN, succeeded steps kept)."""
    request: dict[str, Any] = {"PipelineExecutionArn": arn}
    if max_parallel is not None:
        request["ParallelismConfiguration"] = {"MaxParallelExecutionSteps": max_parallel}
    with aws.call(f"RetryPipelineExecution {arn}"):
        return (
            (session or aws.session(config))
            .client("sagemaker")
            .retry_pipeline_execution(**request)["PipelineExecutionArn"]
        )


def stop(config: PipelineConfig, arn: str, session: Any = None) -> str:
    """StopPipelineExecution: the running steps' jobs are stopped, the execution ends Stopped."""
    with aws.call(f"StopPipelineExecution {arn}"):
        return (
            (session or aws.session(config))
            .client("sagemaker")
            .stop_pipeline_execution(PipelineExecutionArn=arn)["PipelineExecutionArn"]
        )

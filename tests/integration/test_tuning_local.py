"""The local Tuning step: the search over the step's own ranges, a real tuning job of real local Linear Learner
training jobs inside a real pipeline run (tiny imbalanced table, three jobs), the properties SageMaker fills, the
artifact where get_top_model_s3_uri points, the cache, and what `execution show`, the summary and the plot show."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.imbalanced_table import write_imbalanced_table

from pipeline.api.execution import LocalExecution
from pipeline.cli.render.summary import summarise
from pipeline.definition.config import load_config
from pipeline.local import cache
from pipeline.local.data import user_data
from pipeline.local.executions import ExecutionRecord, StepRecord
from pipeline.local.expressions import Context, resolve
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.tuning import TuningJobs
from pipeline.local.plan import StepSpec
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.search import Observation, RangeError, Search, dimensions
from pipeline.local.workdir import Workdir

RANGES = {
    "IntegerParameterRanges": [
        {"Name": "mini_batch_size", "MinValue": "100", "MaxValue": "5000", "ScalingType": "Logarithmic"}
    ],
    "ContinuousParameterRanges": [
        {"Name": "learning_rate", "MinValue": "1e-05", "MaxValue": "1.0", "ScalingType": "Logarithmic"},
        {"Name": "momentum", "MinValue": "0", "MaxValue": "0.999", "ScalingType": "ReverseLogarithmic"},
        {"Name": "init_bias", "MinValue": "-2", "MaxValue": "2", "ScalingType": "Linear"},
    ],
    "CategoricalParameterRanges": [{"Name": "use_bias", "Values": ["true", "false"]}],
}
# a tiny run: three training jobs, two at a time, one instance each, few epochs (not support.settings.FAST: tuning
# searches mini_batch_size and trains one model per job)
TINY_TUNING_RUN = {
    "Epochs": "4",
    "TrainingInstanceCount": "1",
    "ProcessingInstanceCount": "1",
    "MetricThreshold": "0",  # three jobs of four epochs prove the plumbing, not the quality: always register
    # the untuned defaults' models all zeroed by a huge l1 (constant scores, AUC 0.5), so the tuned model (l1 is
    # tuned, not static there) is kept: the run that registers the tuning step's model
    "L1": "1000",
}


# ---------------------------------------------------------------- the search


def test_values_follow_each_ranges_scale() -> None:
    batch, rate, momentum, bias, use_bias = dimensions(RANGES)
    assert [d.name for d in (batch, rate, momentum, bias, use_bias)] == [
        "mini_batch_size",
        "learning_rate",
        "momentum",
        "init_bias",
        "use_bias",
    ]
    assert (rate.value(0.0), rate.value(0.5), rate.value(1.0)) == ("1e-05", "0.00316228", "1")  # geometric middle
    assert (batch.value(0.0), batch.value(0.5), batch.value(1.0)) == ("100", "707", "5000")
    assert float(momentum.value(0.5)) == pytest.approx(1 - math.sqrt(1 * 0.001), rel=1e-5)  # dense near the top
    assert (bias.value(0.25), use_bias.value(0.2), use_bias.value(0.7)) == ("-1", "true", "false")


@pytest.mark.parametrize(
    "ranges, message",
    [
        (
            {"ContinuousParameterRanges": [{"Name": "wd", "MinValue": "0", "MaxValue": "1", "ScalingType": "Log"}]},
            "hyperparameter range wd: ScalingType 'Log' is not one of Auto, Linear, Logarithmic, ReverseLogarithmic",
        ),
        (
            {"ContinuousParameterRanges": [{"Name": "wd", "MinValue": "1", "MaxValue": "0.5"}]},
            "hyperparameter range wd: MinValue 1 is above MaxValue 0.5",
        ),
        (
            {"IntegerParameterRanges": [{"Name": "epochs", "MinValue": "one", "MaxValue": "5"}]},
            "hyperparameter range epochs: MinValue 'one' is not a number",
        ),
        ({"CategoricalParameterRanges": [{"Name": "loss", "Values": []}]}, "hyperparameter range loss: no Values"),
        ({}, "ParameterRanges holds no range to search"),
    ],
)
def test_bad_ranges_are_named(ranges: dict[str, Any], message: str) -> None:
    with pytest.raises(RangeError, match=message):
        dimensions(ranges)


def run_search(strategy: str, seed: int, rounds: int = 4) -> list[dict[str, str]]:
    """Rounds of two candidates on a known function (best at learning_rate 0.01, init_bias 1)."""
    space = dimensions(RANGES)
    search = Search(strategy, space, seed, minimize=True, max_jobs=2 * rounds)
    observations: list[Observation] = []
    proposed = []
    for _ in range(rounds):
        for point in search.propose(2, observations):
            values = search.point_values(point)
            loss = (math.log10(float(values["learning_rate"])) + 2) ** 2 + (float(values["init_bias"]) - 1) ** 2
            observations.append(Observation(point, loss))
            proposed.append(values)
    return proposed


@pytest.mark.parametrize("strategy", ["random", "gp-ei"])
def test_a_seed_gives_the_same_candidates_inside_the_ranges(strategy: str) -> None:
    first, again, other = run_search(strategy, 7), run_search(strategy, 7), run_search(strategy, 8)
    assert first == again and first != other
    for values in first:
        assert 100 <= int(values["mini_batch_size"]) <= 5000
        assert 1e-5 <= float(values["learning_rate"]) <= 1.0
        assert 0 <= float(values["momentum"]) <= 0.999
        assert values["use_bias"] in ("true", "false")


def test_the_model_based_search_starts_at_the_centre_then_improves_on_random_search() -> None:
    def best(proposed: list[dict[str, str]]) -> float:
        return min(
            (math.log10(float(v["learning_rate"])) + 2) ** 2 + (float(v["init_bias"]) - 1) ** 2 for v in proposed
        )

    guided = [run_search("gp-ei", seed, rounds=6) for seed in range(5)]
    assert all(run[0]["learning_rate"] == "0.00316228" and run[0]["use_bias"] == "true" for run in guided)
    random = [best(run_search("random", seed, rounds=6)) for seed in range(5)]
    assert np.median([best(run) for run in guided]) < np.median(random)


def test_the_model_based_search_starts_from_the_defaults_it_is_given() -> None:
    space = dimensions(RANGES)
    defaults = {"learning_rate": "0.1", "use_bias": "false", "init_bias": "5", "mini_batch_size": "auto"}
    search = Search("gp-ei", space, 3, minimize=True, max_jobs=12, defaults=defaults)
    first = search.point_values(search.propose(1, [])[0])
    # given values where they are values of the range (clipped into it), the centre elsewhere
    assert first == {
        "learning_rate": "0.1",
        "use_bias": "false",
        "init_bias": "2",
        "mini_batch_size": "707",
        "momentum": space[2].value(0.5),
    }
    for dimension in space:
        for unit in (0.0, 0.3, 1.0):
            assert dimension.value(dimension.unit(dimension.value(unit))) == dimension.value(unit)


# ---------------------------------------------------------------- a real tuning job in a real run


@pytest.fixture(scope="module")
def tuned_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalRun, ExecutionRecord, Path]:
    workdir = tmp_path_factory.mktemp("tuning")
    table = write_imbalanced_table(
        workdir / "data" / "table.csv", rows=600, features=6, informative=3, positive_share=0.15
    )
    config = load_config({"tuning_max_jobs": 3, "tuning_max_parallel_jobs": 2}, env={})
    run = build_local_run(config, Workdir.at(workdir))
    record = run.execute(user_data(table, "label", "binary_classifier"), TINY_TUNING_RUN)
    return run, record, table


def test_the_tuning_job_trains_every_candidate_and_reports_the_best(tuned_run) -> None:
    run, record, _ = tuned_run
    assert record.status == "Succeeded", record.failure_reason
    assert record.steps["Register"].status == "Succeeded"
    # the untuned defaults trained beside the tuning job, and scored by Evaluate on the same test split
    assert record.steps["Train"].status == "Succeeded"
    report = json.loads(
        run.s3.path(record.steps["Evaluate"].properties["PropertyFiles"]["EvaluationReport"]).read_text()
    )
    assert (
        report["defaults"]["model_data_url"] == record.steps["Train"].properties["ModelArtifacts"]["S3ModelArtifacts"]
    )
    assert report["defaults"]["gate"]["value"] == 0.5  # constant scores
    assert isinstance(report["decision"]["defaults_floor"], float)
    best = record.steps["Tune"].properties["BestTrainingJob"]["TrainingJobName"]
    tuned_artifact = f"s3://llpipe-local/linear-learner-pipeline/tune/{best}/output/model.tar.gz"
    assert report["tuning"]["kept"] == report["decision"]["kept_model"] == "tuned"
    assert report["tuning"]["model_data_url"] == report["decision"]["model_data_url"] == tuned_artifact
    assert report["decision"]["reason"].startswith("tuning paid: ")
    assert "tuned" not in report
    tune = record.steps["Tune"].properties
    assert tune["HyperParameterTuningJobStatus"] == "Completed"
    assert tune["HyperParameterTuningJobName"] == f"pipelines-{record.id}-Tune"
    summaries = tune["TrainingJobSummaries"]
    assert len(summaries) == 3 and tune["TrainingJobStatusCounters"]["Completed"] == 3
    assert tune["ObjectiveStatusCounters"] == {"Succeeded": 3, "Pending": 0, "Failed": 0}
    values = [s["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] for s in summaries]
    assert values == sorted(values), "sorted best (lowest objective loss) first"
    assert tune["BestTrainingJob"] == summaries[0]
    # every trial has its scaling record, with the trial's own mini-batch in its global batch
    scaling = {item["job"]: item for item in record.steps["Tune"].scaling}
    assert sorted(scaling) == sorted(s["TrainingJobName"] for s in summaries)
    for summary in summaries:
        item = scaling[summary["TrainingJobName"]]
        batch = int(summary["TunedHyperParameters"].get("mini_batch_size", item["mini_batch_size"]))
        assert item["global_batch"] == item["instances"] * batch and len(item["hosts"]) == item["instances"]
    # the Bayesian search starts where an untuned run stands: Linear Learner's defaults, clipped into the ranges
    first = next(s for s in summaries if s["TrainingJobName"].rsplit("-", 2)[-2] == "001")
    assert first["TunedHyperParameters"] == {
        "learning_rate": "0.1",
        "wd": "0.0001",
        "l1": "1e-07",
        "mini_batch_size": "1000",
    }
    ranges = dimensions(tune["HyperParameterTuningJobConfig"]["ParameterRanges"])
    for summary in summaries:
        assert summary["TrainingJobStatus"] == "Completed" and summary["ObjectiveStatus"] == "Succeeded"
        assert summary["FinalHyperParameterTuningJobObjectiveMetric"]["MetricName"] == "validation:objective_loss"
        assert set(summary["TunedHyperParameters"]) == {d.name for d in ranges}
        # the objective is the training job's own final metric, and it trained with the tuned values
        folder = record.folder / "steps" / "Tune" / "training-jobs" / summary["TrainingJobName"]
        described = json.loads((folder / "training-job.json").read_text())
        metrics = {m["MetricName"]: m["Value"] for m in described["FinalMetricDataList"]}
        assert metrics["validation:objective_loss"] == summary["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
        hyperparameters = described["HyperParameters"]
        assert hyperparameters["num_models"] == "1" and hyperparameters["epochs"] == "4"
        assert hyperparameters["_tuning_objective_metric"] == "validation:objective_loss"
        assert {k: hyperparameters[k] for k in summary["TunedHyperParameters"]} == summary["TunedHyperParameters"]
        assert run.s3.path(described["ModelArtifacts"]["S3ModelArtifacts"]).is_file()


# ---------------------------------------------------------------- the untuned defaults' model kept


@pytest.fixture(scope="module")
def defaults_kept_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalRun, ExecutionRecord]:
    """A run whose tuning ranges make every tuned model constant (l1 100 to 1000 zeroes the weights): the untuned
    defaults' model is better beyond the noise, so the run keeps it. The definition built afresh (not cached: the
    cache's key does not see a patched range)."""
    from pipeline.definition import tuning

    workdir = tmp_path_factory.mktemp("defaults-kept")
    table = write_imbalanced_table(
        workdir / "data" / "table.csv", rows=600, features=6, informative=3, positive_share=0.15
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LLPIPE_DEFINITION_CACHE", "off")
        patch.setitem(tuning.RANGES, "l1", ("Continuous", "100", "1000", "Logarithmic"))
        config = load_config({"tuning_max_jobs": 2, "tuning_max_parallel_jobs": 2}, env={})
        run = build_local_run(config, Workdir.at(workdir))
        parameters = {key: value for key, value in TINY_TUNING_RUN.items() if key != "L1"}
        record = run.execute(user_data(table, "label", "binary_classifier"), parameters)
    return run, record


def test_a_tuned_model_worse_than_the_defaults_gives_way_to_the_defaults_model(defaults_kept_run) -> None:
    run, record = defaults_kept_run
    assert record.status == "Succeeded", record.failure_reason
    assert record.steps["Register"].status == "Succeeded"
    defaults_artifact = record.steps["Train"].properties["ModelArtifacts"]["S3ModelArtifacts"]
    best = record.steps["Tune"].properties["BestTrainingJob"]["TrainingJobName"]
    tuned_artifact = f"s3://llpipe-local/linear-learner-pipeline/tune/{best}/output/model.tar.gz"
    report = json.loads(
        run.s3.path(record.steps["Evaluate"].properties["PropertyFiles"]["EvaluationReport"]).read_text()
    )
    # the report's model-quality section and gate are the defaults' model's; the tuned model's in its own section
    tuned = report["tuned"]
    assert tuned["model_data_url"] == tuned_artifact and tuned["gate"]["value"] == 0.5  # constant scores
    assert report["gate"]["value"] == report["binary_classification_metrics"]["auc"]["value"] > 0.5
    assert "defaults" not in report
    assert (report["tuning"]["kept"], report["tuning"]["model_data_url"]) == ("defaults", defaults_artifact)
    decision = report["decision"]
    assert (decision["kept_model"], decision["model_data_url"]) == ("defaults", defaults_artifact)
    assert decision["reason"].startswith("tuning did not pay: the tuned model's auc 0.5 is below the untuned")
    assert decision["challenger_value"] == report["gate"]["value"]
    # the predictions file beside the report is the kept model's: the tuned model's scores are all one value
    report_path = run.s3.path(record.steps["Evaluate"].properties["PropertyFiles"]["EvaluationReport"])
    lines = (report_path.parent / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == report["test_rows"]["count"] and len({json.loads(line)["score"] for line in lines}) > 1
    # the batch transform scored the tuned model; the registered inference pipeline serves the defaults' model
    created = json.loads((record.folder / "steps" / "CreateModel" / "arguments.json").read_text())["Containers"]
    assert created[1]["ModelDataUrl"] == tuned_artifact
    package = json.loads((record.folder / "steps" / "Register" / "arguments.json").read_text())
    featurizer, algorithm, labels = package["InferenceSpecification"]["Containers"]
    assert algorithm == {**created[1], "ModelDataUrl": defaults_artifact}
    # the registered featurizer says what unseen values get (UnseenCategories, resolved); the transform's does not
    assert featurizer["Environment"].pop("LLPIPE_UNSEEN_CATEGORIES") == "other"
    assert (featurizer, labels) == (created[0], created[2])
    assert run.s3.path(defaults_artifact).is_file()
    # the package's model metrics: the report whose sections are the defaults' model's
    assert package["ModelMetrics"]["ModelQuality"]["Statistics"]["S3Uri"].endswith("/evaluation.json")


def test_the_summary_and_execution_show_say_the_defaults_model_was_kept(
    defaults_kept_run, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline import cli

    run, record = defaults_kept_run
    summary = summarise(LocalExecution(record, run.s3), render_plots=False)
    kept = summary["tuning"]["kept"]
    defaults_artifact = record.steps["Train"].properties["ModelArtifacts"]["S3ModelArtifacts"]
    assert (kept["kept"], kept["model_data_url"]) == ("defaults", defaults_artifact)
    assert summary["paths"]["model"] == str(run.s3.path(defaults_artifact))
    assert summary["gate"]["reason"].startswith("tuning did not pay")
    assert cli.main(["execution", "show", record.id, "--workdir", str(run.workdir.root)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "Kept the defaults model: tuning did not pay: the tuned model's auc 0.5 is below" in shown


def test_downstream_steps_use_the_best_training_jobs_artifact(tuned_run) -> None:
    run, record, _ = tuned_run
    best = record.steps["Tune"].properties["BestTrainingJob"]["TrainingJobName"]
    expected = f"s3://llpipe-local/linear-learner-pipeline/tune/{best}/output/model.tar.gz"
    arguments = json.loads((record.folder / "steps" / "CreateModel" / "arguments.json").read_text())
    assert arguments["Containers"][1]["ModelDataUrl"] == expected  # the inference pipeline's Linear Learner
    assert run.s3.path(expected).is_file()
    package = json.loads((record.folder / "steps" / "Register" / "arguments.json").read_text())
    assert package["InferenceSpecification"]["Containers"][1]["ModelDataUrl"] == expected


def test_expressions_resolve_the_tuning_steps_property_paths(tuned_run) -> None:
    _, record, _ = tuned_run
    context = Context(parameters={}, execution={}, steps={"Tune": record.steps["Tune"].properties})
    best = record.steps["Tune"].properties["BestTrainingJob"]["TrainingJobName"]
    assert resolve({"Get": "Steps.Tune.TrainingJobSummaries[0].TrainingJobName"}, context) == best
    assert resolve({"Get": "Steps.Tune.BestTrainingJob.TrainingJobName"}, context) == best
    value = resolve({"Get": "Steps.Tune.BestTrainingJob.FinalHyperParameterTuningJobObjectiveMetric.Value"}, context)
    assert (
        value
        == record.steps["Tune"].properties["TrainingJobSummaries"][0]["FinalHyperParameterTuningJobObjectiveMetric"][
            "Value"
        ]
    )
    assert resolve({"Get": "Steps.Tune.HyperParameterTuningJobStatus"}, context) == "Completed"


def test_a_second_run_hits_the_cache_and_still_finds_the_model(tuned_run) -> None:
    run, first, table = tuned_run
    second = run.execute(user_data(table, "label", "binary_classifier"), TINY_TUNING_RUN)
    assert second.status == "Succeeded", second.failure_reason
    assert second.steps["Tune"].cache_hit_source == first.id
    # the best job's artifact lives under the tuning prefix, not the first execution's folder: still there
    arguments = json.loads((second.folder / "steps" / "CreateModel" / "arguments.json").read_text())
    assert all(run.s3.path(container["ModelDataUrl"]).is_file() for container in arguments["Containers"])


def test_summary_names_the_best_and_plots_the_objective(tuned_run) -> None:
    run, record, _ = tuned_run
    summary = summarise(LocalExecution(record, run.s3))
    tuning = summary["tuning"]
    best = record.steps["Tune"].properties["BestTrainingJob"]
    assert tuning["best_training_job"] == best["TrainingJobName"]
    assert tuning["best_value"] == best["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]
    assert (tuning["objective"], tuning["type"]) == ("validation:objective_loss", "Minimize")
    assert tuning["training_jobs"] == 3
    assert summary["paths"]["model"].endswith(f"/tune/{best['TrainingJobName']}/output/model.tar.gz")
    plot = Path(summary["paths"]["plots"][0])
    assert plot.name == "tuning_objective.png" and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(summary["paths"]["plots"]) == 4  # the objective, then ROC, precision-recall, confusion matrix


def test_the_tuning_steps_cost_is_its_training_jobs_instance_seconds(tuned_run) -> None:
    from datetime import datetime

    from pipeline.core.cost import local_costs

    _, record, _ = tuned_run
    definition = json.loads((record.folder / "definition.json").read_text())
    [tune] = [cost for cost in local_costs(record.steps, definition, record.parameters) if cost.step == "Tune"]
    summaries = record.steps["Tune"].properties["TrainingJobSummaries"]
    seconds = sum(
        (datetime.fromisoformat(s["TrainingEndTime"]) - datetime.fromisoformat(s["TrainingStartTime"])).total_seconds()
        for s in summaries
    )
    assert (tune.kind, tune.instance_type, tune.instance_count) == ("HyperParameterTuningJob", "ml.m5.xlarge", 1)
    assert tune.seconds == pytest.approx(seconds) and tune.instance_seconds == pytest.approx(seconds)


def test_execution_show_lists_the_trials(tuned_run, capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline import cli

    run, record, _ = tuned_run
    code = cli.main(["execution", "show", record.id, "--workdir", str(run.workdir.root)])
    out = capsys.readouterr().out
    assert code == 0
    assert "Tune: training jobs: validation:objective_loss (minimized)" in out
    rows = [line for line in out.splitlines() if line.startswith("│") and " done " in line]
    assert len(rows) == 3
    best_number = int(record.steps["Tune"].properties["BestTrainingJob"]["TrainingJobName"].rsplit("-", 2)[-2])
    assert any(f"*{best_number} " in row for row in rows)


# ---------------------------------------------------------------- the job runner on its own


def run_job(run: LocalRun, record: ExecutionRecord, tmp_path: Path, change) -> dict[str, Any]:
    """The Tune step's resolved request from the run, changed, run again as a new tuning job."""
    arguments = json.loads((record.folder / "steps" / "Tune" / "arguments.json").read_text())
    change(arguments)
    step = StepSpec("Tune", "Tuning", {"Name": "Tune", "Type": "Tuning", "Arguments": arguments}, frozenset())
    job = Job(step, arguments, "b0b0b0b0b0b0", "linear-learner-pipeline", StepRecord("Tune", "Tuning"), tmp_path)
    return TuningJobs(run.s3)(job)


def test_an_objective_no_training_job_reports_fails_the_step_naming_it(tuned_run, tmp_path: Path) -> None:
    run, record, _ = tuned_run

    def regression_metric(arguments: dict[str, Any]) -> None:
        config = arguments["HyperParameterTuningJobConfig"]
        config["HyperParameterTuningJobObjective"] = {"MetricName": "validation:rmse", "Type": "Minimize"}
        config["ResourceLimits"] = {"MaxNumberOfTrainingJobs": 1, "MaxParallelTrainingJobs": 1}

    with pytest.raises(
        StepFailed,
        match="none of the 1 training jobs reported validation:rmse: the training job reported no validation:rmse",
    ):
        run_job(run, record, tmp_path, regression_metric)


def test_failed_training_jobs_are_listed_with_their_reason(tuned_run, tmp_path: Path) -> None:
    run, record, _ = tuned_run

    def a_range_the_algorithm_rejects(arguments: dict[str, Any]) -> None:
        config = arguments["HyperParameterTuningJobConfig"]
        config["ParameterRanges"]["IntegerParameterRanges"].append(
            {"Name": "epochs", "MinValue": "0", "MaxValue": "1", "ScalingType": "Linear"}
        )
        config["Strategy"] = "Random"
        config["ResourceLimits"] = {"MaxNumberOfTrainingJobs": 4, "MaxParallelTrainingJobs": 2}
        del arguments["TrainingJobDefinition"]["StaticHyperParameters"]["epochs"]

    properties = run_job(run, record, tmp_path, a_range_the_algorithm_rejects)
    summaries = properties["TrainingJobSummaries"]
    failed = [s for s in summaries if s["TrainingJobStatus"] == "Failed"]
    assert failed and all(s["TunedHyperParameters"]["epochs"] == "0" for s in failed)
    assert all("epochs" in s["FailureReason"] for s in failed)
    assert summaries[-len(failed) :] == failed, "jobs without an objective come last"
    assert properties["TrainingJobStatusCounters"]["NonRetryableError"] == len(failed)
    assert properties["BestTrainingJob"]["TunedHyperParameters"]["epochs"] == "1"


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda a: a["HyperParameterTuningJobConfig"].update(Strategy="Hyperband"),
            "tuning strategy 'Hyperband' is not run locally",
        ),
        (
            lambda a: a["TrainingJobDefinition"]["StaticHyperParameters"].update(wd="0.1"),
            "hyperparameter\\(s\\) both static and tuned: wd",
        ),
        (
            lambda a: a["HyperParameterTuningJobConfig"]["ParameterRanges"].update(
                ContinuousParameterRanges=[
                    {"Name": "wd", "MinValue": "0", "MaxValue": "1", "ScalingType": "Logarithmic"}
                ]
            ),
            "hyperparameter range wd: a logarithmic scale needs MinValue > 0",
        ),
    ],
)
def test_requests_the_local_backend_cannot_run_fail_before_training(tuned_run, tmp_path: Path, change, message) -> None:
    run, record, _ = tuned_run
    with pytest.raises(StepFailed, match=message):
        run_job(run, record, tmp_path, change)
    assert not (tmp_path / "training-jobs").exists()


def test_cache_key_follows_the_services_tuning_attributes(tuned_run) -> None:
    _, record, _ = tuned_run
    arguments = json.loads((record.folder / "steps" / "Tune" / "arguments.json").read_text())
    key = cache.cache_key("Tuning", arguments)

    def changed(edit) -> str:
        copy = json.loads(json.dumps(arguments))
        edit(copy)
        return cache.cache_key("Tuning", copy)

    # outputs, role and instances are not part of the key
    assert changed(lambda a: a["TrainingJobDefinition"]["OutputDataConfig"].update(S3OutputPath="s3://b/x")) == key
    assert changed(lambda a: a["TrainingJobDefinition"].update(RoleArn="arn:aws:iam::123456789012:role/x")) == key
    assert changed(lambda a: a["TrainingJobDefinition"]["ResourceConfig"].update(InstanceCount=4)) == key
    # what the jobs compute from is
    assert changed(lambda a: a["TrainingJobDefinition"]["StaticHyperParameters"].update(epochs="5")) != key
    assert (
        changed(lambda a: a["HyperParameterTuningJobConfig"]["ResourceLimits"].update(MaxNumberOfTrainingJobs=4)) != key
    )
    assert changed(lambda a: a["TrainingJobDefinition"]["InputDataConfig"][0].update(ChannelName="other")) != key


def test_plot_error_names_the_metric(tmp_path: Path) -> None:
    from pipeline.api.plots import PlotError, render_tuning_plot

    with pytest.raises(PlotError, match="no training job of the tuning job reported validation:rmse"):
        render_tuning_plot([{"number": 1, "objective": None}], "validation:rmse", "Minimize", tmp_path / "p.png")
    assert not (tmp_path / "p.png").exists()


def test_tuning_run_of_the_cli_flag(tuned_run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``llpipe run --tuning-max-jobs`` builds the tuned definition; the summary line names the best job."""
    from pipeline import cli

    _, _, table = tuned_run
    params = [
        arg for name, value in {**TINY_TUNING_RUN, "Epochs": "2"}.items() for arg in ("--param", f"{name}={value}")
    ]
    code = cli.main(
        [
            "run",
            "--workdir",
            str(tmp_path),
            "--data",
            str(table),
            "--label-column",
            "label",
            "--predictor-type",
            "binary_classifier",
            "--tuning-max-jobs",
            "2",
            "--quiet",
            *params,
        ]
    )
    assert code == 0
    store_record = json.loads(next((tmp_path / "executions").glob("*/execution.json")).read_text())
    steps = {step["name"]: step for step in store_record["steps"]}
    assert steps["Tune"]["status"] == "Succeeded" and len(steps["Tune"]["properties"]["TrainingJobSummaries"]) == 2
    assert steps["Train"]["status"] == "Succeeded"  # the untuned defaults, beside the tuning job, for Evaluate


def test_a_cache_hit_whose_models_are_gone_reruns_the_tuning_job(tuned_run) -> None:
    """Last in this module: it deletes the first run's best model."""
    run, first, table = tuned_run
    best = first.steps["Tune"].properties["BestTrainingJob"]["TrainingJobName"]
    run.s3.path(f"s3://llpipe-local/linear-learner-pipeline/tune/{best}/output/model.tar.gz").unlink()
    record = run.execute(user_data(table, "label", "binary_classifier"), TINY_TUNING_RUN)
    assert record.status == "Succeeded", record.failure_reason
    assert record.steps["Tune"].cache_hit_source is None
    assert record.steps["Tune"].properties["HyperParameterTuningJobName"] == f"pipelines-{record.id}-Tune"

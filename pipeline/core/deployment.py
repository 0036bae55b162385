"""Deploying a registered version to a stage's endpoint, backend-neutral: resolve the version, check it against what
is live, roll it out, smoke-test it, record the pass, or put the previous version back.

A backend is a :class:`DeployTarget` (SageMaker: ``pipeline.sagemaker.endpoints.SageMakerEndpoints``; locally the
``llpipe serve`` endpoints). :func:`deploy` is the one flow both run:

1. **resolve**: staging takes the version asked for (an ARN, a version number, ``latest-approved``); prod takes
   exactly the version staging serves *and* that passed staging's smoke test (asking for another one is refused);
   a version that is not Approved is refused.
2. **no-op**: the stage already serves that version and it passed there: nothing changes.
3. **checks before anything changes**: when another version is live, the raw columns a request carries (the
   featurizer's schema) must be the live version's, in the same order, or clients would break (refused, naming the
   columns added and removed, unless ``allow_new_columns``); the smoke case (rows of the version's test split and
   batch transform's answers for them) is read; on staging, when another version is live, the live endpoint answers
   the same rows and the candidate's metric must not be below the live one's by more than the tolerance (a worse
   version is refused here, and staging keeps serving the previous one untouched).
4. **roll out** (create or update the endpoint, wait until it serves or the service rolled it back).
5. **smoke test** the new endpoint: its answers must equal batch transform's for the same rows.
6. **record** the pass on what now serves, or **restore** the previous version (nothing was live: remove it).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from pipeline.core.errors import LlpipeError, opt
from pipeline.core.names import SERVING_FEATURIZER, SERVING_ROLE_VARIABLE, SERVING_SCHEMA_FILE
from pipeline.core.smoke import QualityCheck, SmokeCase, SmokeResult, compare_answers, parse_answers, quality
from serving.model import model_documents

STAGING, PROD = "staging", "prod"
STAGES = (STAGING, PROD)
LATEST_APPROVED = "latest-approved"
IN_SERVICE = "InService"
FAILED = "Failed"  # an endpoint that serves nothing and can only be deleted
ROLLED_BACK = "RolledBack"
DEFAULT_SMOKE_ROWS = 200
DEFAULT_QUALITY_TOLERANCE = 0.01
NAME_LIMIT = 63  # SageMaker's limit for endpoints, endpoint configs and models

Progress = Callable[[str], None]


class DeployError(LlpipeError):
    """A deployment that cannot be made as asked (a version that is not approved or did not pass staging, an
    endpoint busy with another deployment); nothing was changed."""


class InvokeError(Exception):
    """An endpoint answered a request with an error (the message is the service's)."""


@dataclass(frozen=True)
class Version:
    """A registered model version, as the deployment needs it."""

    package_arn: str
    version: int
    group: str
    approval_status: str
    execution_arn: str | None  # MetadataProperties.GeneratedBy: the pipeline execution that trained it
    # InferenceSpecification.Containers (Image, ModelDataUrl, Environment): llpipe's inference pipeline is three
    containers: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Live:
    """What a stage's endpoint serves now."""

    stage: str
    endpoint: str
    status: str  # SageMaker's EndpointStatus (InService, Updating, Failed, ...)
    handle: str | None  # what serves the version (SageMaker: the EndpointConfigName); restore() takes it back
    package_arn: str | None
    version: int | None
    execution_arn: str | None
    since: datetime | None  # when the endpoint last changed, UTC
    smoke_test: str | None = None  # the recorded pass ("passed: ..."), None when the version has not passed here
    failure_reason: str | None = None
    url: str | None = None  # where a local endpoint answers (SageMaker's are invoked by name)

    @property
    def passed(self) -> bool:
        return bool(self.smoke_test and self.smoke_test.startswith("passed"))


@dataclass(frozen=True)
class Rollout:
    """How a roll-out ended: the endpoint serves ``handle`` (InService), or the service rolled it back to the
    previous one (RolledBack), or it failed (Failed)."""

    action: str  # created or updated
    status: str  # InService, RolledBack or Failed
    handle: str
    reason: str | None = None


class DeployTarget(Protocol):
    """What a backend does for :func:`deploy`; every method names the stage, never a backend's resource."""

    def endpoint_name(self, stage: str) -> str:
        """The stage's endpoint name."""

    def resolve(self, requested: str) -> Version:
        """A version of the configured group: an ARN, a version number or ``latest-approved``."""

    def live(self, stage: str) -> Live | None:
        """What the stage serves now, None when it has no endpoint."""

    def smoke_case(self, version: Version, rows: int) -> SmokeCase:
        """Rows of the version's execution's test split and batch transform's answers for them."""

    def invoke(self, stage: str, case: SmokeCase) -> bytes:
        """The stage endpoint's answer to the case's request; raises :class:`InvokeError`."""

    def roll_out(self, stage: str, version: Version, current: Live | None, progress: Progress) -> Rollout:
        """Make the stage's endpoint serve ``version`` (create or update) and wait until it serves or failed."""

    def restore(self, stage: str, previous: Live | None, progress: Progress) -> str:
        """Serve ``previous`` again (None: remove the endpoint); returns what was done, in a few words."""

    def record_pass(self, stage: str, handle: str, result: SmokeResult) -> None:
        """Record on what serves the stage (``handle``) that its version passed the smoke test there."""

    def read_object(self, uri: str) -> bytes:
        """An S3 object's bytes (a featurizer's model data, to compare request columns)."""


@dataclass(frozen=True)
class Outcome:
    """What :func:`deploy` did."""

    stage: str
    endpoint: str
    version: Version
    status: str  # deployed, unchanged, skipped (older, if_newer), refused (worse), rolled-back, failed, smoke-failed
    message: str
    previous: Live | None = None
    rollout: Rollout | None = None
    smoke: SmokeResult | None = None
    restored: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def exit_code(self) -> int:
        return 0 if self.status in ("deployed", "unchanged", "skipped") else 1


def _cut(name: str, suffix: str) -> str:
    """``name`` cut so that ``name + suffix`` fits :data:`NAME_LIMIT`."""
    return f"{name[: NAME_LIMIT - len(suffix)].rstrip('-')}{suffix}"


def stage_endpoint_name(pipeline_name: str, stage: str) -> str:
    """``<pipeline>-<stage>``, on SageMaker and locally; longer than 63 characters: cut, with a hash of the whole
    name kept."""
    name = f"{pipeline_name}-{stage}"
    if len(name) <= NAME_LIMIT:
        return name
    return _cut(pipeline_name, f"-{hashlib.sha256(name.encode()).hexdigest()[:8]}-{stage}")


def resolve_for_stage(target: DeployTarget, stage: str, requested: str | None) -> Version:
    """Staging: the version asked for (default latest-approved). Prod: staging's passed version, and only it."""
    if stage not in STAGES:
        raise DeployError(f"unknown stage {stage!r}: expected one of {', '.join(STAGES)}")
    if stage == STAGING:
        version = target.resolve(requested or LATEST_APPROVED)
    else:
        staging = target.live(STAGING)
        if staging is None or staging.package_arn is None:
            raise DeployError(f"staging serves no version: deploy to staging first ({opt('stage', 'staging')})")
        if not staging.passed or staging.status != IN_SERVICE:
            raise DeployError(
                f"staging's version {staging.version} ({staging.package_arn}) has not passed its smoke test there "
                f"(endpoint {staging.endpoint} is {staging.status}): only a version that passed staging goes to prod"
            )
        version = target.resolve(staging.package_arn)
        if requested and requested != LATEST_APPROVED:
            asked = target.resolve(requested)
            if asked.package_arn != version.package_arn:
                raise DeployError(
                    f"version {asked.version} did not pass staging: staging serves and passed version "
                    f"{version.version} ({version.package_arn}); deploy {asked.version} to staging first"
                )
    if version.approval_status != "Approved":
        raise DeployError(
            f"version {version.version} ({version.package_arn}) is {version.approval_status}, not Approved: "
            "approve it first (llpipe models approve)"
        )
    return version


def deploy(
    target: DeployTarget,
    stage: str,
    requested: str | None = None,
    rows: int = DEFAULT_SMOKE_ROWS,
    tolerance: float = DEFAULT_QUALITY_TOLERANCE,
    progress: Progress = lambda message: None,
    if_newer: bool = False,
    allow_new_columns: bool = False,
) -> Outcome:
    """Resolve, check, roll out, smoke-test, record or restore (the module's docstring). Refusals before anything
    changed raise :class:`DeployError`; once it started, the outcome says what happened and what serves now.

    ``if_newer``: a version older than the one the stage serves is skipped (exit 0), so a repeated or stale approval
    event (a metadata change of an older approved version still says Approved) never rolls a stage back.

    ``allow_new_columns``: deploy a version whose request columns differ from the live version's (clients updated)."""
    version = resolve_for_stage(target, stage, requested)
    endpoint = target.endpoint_name(stage)
    current = target.live(stage)
    if current is not None and current.status not in (IN_SERVICE, FAILED):
        raise DeployError(
            f"endpoint {endpoint} is {current.status}: another deployment or change is under way; deploy again "
            "when it has ended (llpipe endpoints shows it)"
        )
    serving = current if current is not None and current.status == IN_SERVICE else None
    done = partial(Outcome, stage, endpoint, version)
    if serving and serving.package_arn == version.package_arn and serving.passed:
        since = f" (since {serving.since:%Y-%m-%d %H:%M:%S} UTC)" if serving.since else ""
        message = f"{endpoint} already serves version {version.version}{since}, which passed its smoke test there"
        return done("unchanged", message, previous=serving)
    if if_newer and serving and serving.version is not None and _same_group(serving, version):
        if version.version < serving.version:
            message = (
                f"version {version.version} is older than version {serving.version}, which {endpoint} serves: "
                "not deployed (newer versions only)"
            )
            return done("skipped", message, previous=serving)
    column_notes: tuple[str, ...] = ()
    if serving is not None and serving.package_arn and serving.package_arn != version.package_arn:
        column_notes = _columns_against_live(target, version, serving, allow_new_columns, progress)
    progress(f"reading the smoke test's rows from execution {version.execution_arn}")
    case = target.smoke_case(version, rows)
    resuming = serving is not None and serving.package_arn == version.package_arn  # rolled out, never passed
    previous = None if resuming else serving
    check, notes = None, column_notes
    if stage == STAGING and previous is not None:
        check, notes = _quality_against_live(target, case, previous, tolerance, progress)
        notes = column_notes + notes
        if check is not None and not check.passed:
            smoke = SmokeResult(case.rows, quality=check, notes=notes)
            message = (
                f"version {version.version} is worse than the live version {previous.version} on the same "
                f"{case.rows} test rows: {smoke.summary()}; {endpoint} still serves version {previous.version}"
            )
            return done("refused", message, previous=previous, smoke=smoke)
    rollout = None
    if not resuming:
        rollout = target.roll_out(stage, version, current, progress)
        if rollout.status != IN_SERVICE:
            status = "rolled-back" if rollout.status == ROLLED_BACK else "failed"
            what = "was rolled back: the previous version serves" if status == "rolled-back" else "failed"
            message = f"deploying version {version.version} to {endpoint} {what}: {rollout.reason or 'no reason given'}"
            return done(status, message, previous=current, rollout=rollout)
    handle = rollout.handle if rollout else (serving.handle if serving else None) or ""
    progress(f"smoke test: {case.rows} test rows to {endpoint}")
    smoke = _smoke(target, stage, case, check, notes)
    if smoke.passed:
        target.record_pass(stage, handle, smoke)
        verb = "now serves" if rollout else "serves"
        message = f"{endpoint} {verb} version {version.version}; smoke test passed: {smoke.summary()}"
        return done("deployed", message, previous=previous, rollout=rollout, smoke=smoke)
    if resuming:
        after = f"{endpoint} keeps serving version {version.version}, which has not passed (prod refuses it)"
        return done("smoke-failed", f"smoke test failed: {smoke.summary()}; {after}", rollout=rollout, smoke=smoke)
    progress("smoke test failed: " + (f"restoring version {previous.version}" if previous else "removing the endpoint"))
    restored = target.restore(stage, previous, progress)
    message = f"smoke test of version {version.version} failed: {smoke.summary()}; {restored}"
    return done("smoke-failed", message, previous=previous, rollout=rollout, smoke=smoke, restored=restored)


def _same_group(live: Live, version: Version) -> bool:
    return (live.package_arn or "").rsplit("/", 1)[0] == version.package_arn.rsplit("/", 1)[0]


def featurizer_data(version: Version) -> str | None:
    """The featurizer container's ModelDataUrl (Preprocess's model.tar.gz with the run's schema); None for a version
    that is not llpipe's inference pipeline."""
    for container in version.containers:
        if (container.get("Environment") or {}).get(SERVING_ROLE_VARIABLE) == SERVING_FEATURIZER:
            return container.get("ModelDataUrl")
    return None


def request_columns(archive: bytes, uri: str) -> tuple[str, ...]:
    """The raw columns a request carries, in order: the schema's ``feature_columns`` in a featurizer's model data
    (read as the featurizer reads it, :func:`serving.model.model_documents`)."""
    try:
        columns = model_documents(io.BytesIO(archive))[SERVING_SCHEMA_FILE]["feature_columns"]
    except (tarfile.TarError, OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{uri}: no schema with feature_columns ({error!r})") from None
    if not isinstance(columns, list) or not all(isinstance(column, str) for column in columns):
        raise ValueError(f"{uri}: feature_columns is not a list of column names")
    return tuple(columns)


def column_change(live: tuple[str, ...], candidate: tuple[str, ...]) -> str | None:
    """How ``candidate``'s request columns differ from ``live``'s (added, removed, reordered), None when equal."""
    if live == candidate:
        return None
    added = [column for column in candidate if column not in live]
    removed = [column for column in live if column not in candidate]
    parts = [f"added {added}" if added else "", f"removed {removed}" if removed else ""]
    if not added and not removed:
        parts.append("the same columns in another order (headerless CSV and JSON rows are matched by position)")
    return "; ".join(part for part in parts if part)


def _columns_against_live(
    target: DeployTarget, version: Version, live: Live, allow: bool, progress: Progress
) -> tuple[str, ...]:
    """Refuse (:class:`DeployError`) a version whose request columns differ from the live version's unless
    ``allow``; the notes say what was allowed or why the columns could not be compared."""
    progress(f"request columns: version {version.version} against the live version {live.version}")
    try:
        current = target.resolve(live.package_arn or "")
        columns = []
        for each in (current, version):
            uri = featurizer_data(each)
            if uri is None:
                return (f"request columns not compared: version {each.version} has no featurizer container",)
            columns.append(request_columns(target.read_object(uri), uri))
    except (DeployError, ValueError) as error:  # a service error (AwsError) stops the deployment: nothing changed yet
        return (f"request columns not compared: {error}",)
    change = column_change(columns[0], columns[1])
    if change is None:
        return ()
    what = (
        f"version {version.version} takes other request columns than version {live.version}, which {live.endpoint} "
        f"serves: {change}"
    )
    if allow:
        return (f"{what} (new columns allowed)",)
    raise DeployError(
        f"{what}; clients sending version {live.version}'s rows would fail. Nothing was changed: update the clients, "
        f"then deploy with {opt('allow_new_columns', True)}"
    )


def _quality_against_live(
    target: DeployTarget, case: SmokeCase, live: Live, tolerance: float, progress: Progress
) -> tuple[QualityCheck | None, tuple[str, ...]]:
    """The candidate's batch-transform answers against what the live version answers for the same rows."""
    progress(f"quality check: the same {case.rows} rows to the live version {live.version}")
    try:
        answers = parse_answers(target.invoke(live.stage, case))
    except (InvokeError, ValueError) as error:
        return None, (f"quality not compared: the live version {live.version} cannot answer these rows ({error})",)
    candidate, current = quality(case.expected, case.labels), quality(answers, case.labels)
    if candidate is None or current is None:
        why = "the rows cannot measure it (one class only, or constant labels)"
        if len(answers) != case.rows:
            why = f"the live version {live.version} gave {len(answers)} answers for {case.rows} rows"
        return None, (f"quality not compared: {why}",)
    return QualityCheck(candidate[0], candidate[1], current[1], tolerance, live.package_arn or ""), ()


def _smoke(
    target: DeployTarget, stage: str, case: SmokeCase, check: QualityCheck | None, notes: tuple[str, ...]
) -> SmokeResult:
    try:
        answers = parse_answers(target.invoke(stage, case))
    except (InvokeError, ValueError) as error:
        return SmokeResult(case.rows, quality=check, error=str(error), notes=notes)
    consistency = compare_answers(case.expected, answers, case.label_values)
    return SmokeResult(case.rows, quality=check, consistency=consistency, notes=notes)

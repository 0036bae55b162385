"""The stages' endpoints on SageMaker: the :class:`~pipeline.core.deployment.DeployTarget` that ``llpipe deploy
--sagemaker`` runs the deploy flow on, what ``llpipe endpoints`` lists and what ``llpipe undeploy`` removes.

A roll-out: DescribeModel / CreateModel from the model package, DescribeAlarms / PutMetricAlarm for the rollback
alarms that are missing, DescribeEndpointConfig / CreateEndpointConfig, then CreateEndpoint (nothing live), or
UpdateEndpoint with the blue/green DeploymentConfig (a Failed endpoint, which can only be deleted, is deleted and
created again); then DescribeEndpoint every ``poll_seconds`` until it is InService, Failed or rolled back (it
serves its previous config again, or went through RollingBack). The live version is read from the endpoint's
config's tags (ListTags), so the no-op and ``llpipe endpoints`` need nothing but the service.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pipeline.core.deployment import IN_SERVICE, InvokeError, Live, Progress, Rollout, Version
from pipeline.core.errors import AwsError
from pipeline.core.smoke import SmokeCase, SmokeResult
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws, smoke_rows
from pipeline.sagemaker import endpoint_requests as requests
from pipeline.sagemaker.packages import package_arn

ENDED = (IN_SERVICE, "Failed", "UpdateRollbackFailed", "OutOfService")


def _missing(error: Any) -> bool:
    """A Describe* error saying the resource does not exist (SageMaker says so with a ValidationException)."""
    info = error.response.get("Error", {})
    message = info.get("Message", "")
    return info.get("Code") == "ResourceNotFound" or (
        info.get("Code") == "ValidationException" and ("Could not find" in message or "does not exist" in message)
    )


def _utc(moment: datetime | None) -> datetime | None:
    return moment.astimezone(timezone.utc) if moment else None


@dataclass(frozen=True)
class Undeployed:
    """What ``undeploy`` removed."""

    endpoint: str
    endpoint_deleted: bool
    endpoint_configs: tuple[str, ...]
    models: tuple[str, ...]
    alarms: tuple[str, ...]


class SageMakerEndpoints:
    """The deploy target on SageMaker (see the module's docstring); ``session`` hands out the boto3 clients."""

    def __init__(
        self,
        config: PipelineConfig,
        traffic: requests.Traffic | None = None,
        session: Any = None,
        poll_seconds: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self.config = config
        self.traffic = traffic or requests.Traffic()
        self.session = session or aws.session(config)
        self.poll_seconds = poll_seconds
        self.sleep = sleep
        self.now = now
        self.sagemaker = self.session.client("sagemaker")
        self._config_arns: dict[str, str] = {}

    def endpoint_name(self, stage: str) -> str:
        return requests.endpoint_name(self.config, stage)

    # -------------------------------------------------------------------------------------------------- reading

    def _describe(self, operation: str, what: str, **name: str) -> dict[str, Any] | None:
        from botocore.exceptions import ClientError

        with aws.call(f"{operation} {what}"):
            try:
                return getattr(self.sagemaker, operation)(**name)
            except ClientError as error:
                if _missing(error):
                    return None
                raise

    def resolve(self, requested: str) -> Version:
        arn = package_arn(self.sagemaker, self.config.model_package_group, requested)
        with aws.call(f"DescribeModelPackage {arn}"):
            package = self.sagemaker.describe_model_package(ModelPackageName=arn)
        if package.get("ModelPackageStatus") != "Completed":
            raise AwsError(f"model package {arn} is {package.get('ModelPackageStatus')}, not Completed")
        return Version(
            package_arn=package["ModelPackageArn"],
            version=int(package.get("ModelPackageVersion", 0)),
            group=package.get("ModelPackageGroupName", self.config.model_package_group),
            approval_status=package.get("ModelApprovalStatus", "PendingManualApproval"),
            execution_arn=(package.get("MetadataProperties") or {}).get("GeneratedBy"),
            containers=tuple((package.get("InferenceSpecification") or {}).get("Containers") or ()),
        )

    def live(self, stage: str) -> Live | None:
        """DescribeEndpoint, then its config (DescribeEndpointConfig) and the config's tags (ListTags)."""
        endpoint = self.endpoint_name(stage)
        described = self._describe("describe_endpoint", endpoint, EndpointName=endpoint)
        if described is None:
            return None
        tags: dict[str, str] = {}
        handle = described.get("EndpointConfigName")
        if handle:
            endpoint_config = self._describe("describe_endpoint_config", handle, EndpointConfigName=handle)
            if endpoint_config is not None:
                arn = endpoint_config["EndpointConfigArn"]
                self._config_arns[handle] = arn
                with aws.call(f"ListTags {arn}"):
                    tags = {tag["Key"]: tag["Value"] for tag in self.sagemaker.list_tags(ResourceArn=arn)["Tags"]}
        version = tags.get(requests.TAG_VERSION)
        return Live(
            stage=stage,
            endpoint=endpoint,
            status=described["EndpointStatus"],
            handle=handle,
            package_arn=tags.get(requests.TAG_PACKAGE),
            version=int(version) if version and version.isdigit() else None,
            execution_arn=tags.get(requests.TAG_EXECUTION),
            since=_utc(described.get("LastModifiedTime")),
            smoke_test=tags.get(requests.TAG_SMOKE_TEST),
            failure_reason=described.get("FailureReason"),
        )

    def smoke_case(self, version: Version, rows: int) -> SmokeCase:
        return smoke_rows.smoke_case(self.session, version, rows)

    def read_object(self, uri: str) -> bytes:
        """GetObject."""
        return smoke_rows.read_object(self.session.client("s3"), uri)

    def invoke(self, stage: str, case: SmokeCase) -> bytes:
        """sagemaker-runtime InvokeEndpoint; a service error is an InvokeError with its message."""
        from botocore.exceptions import ClientError

        endpoint = self.endpoint_name(stage)
        runtime = self.session.client("sagemaker-runtime")
        try:
            answer = runtime.invoke_endpoint(
                EndpointName=endpoint, Body=case.body, ContentType=case.content_type, Accept=case.accept
            )
        except ClientError as error:
            info = error.response.get("Error", {})
            original = error.response.get("OriginalMessage")
            detail = f" (the model answered: {original})" if original else ""
            raise InvokeError(f"InvokeEndpoint {endpoint}: {info.get('Code')}: {info.get('Message')}{detail}") from None
        return answer["Body"].read()

    # ------------------------------------------------------------------------------------------------- changing

    def roll_out(self, stage: str, version: Version, current: Live | None, progress: Progress) -> Rollout:
        endpoint = self.endpoint_name(stage)
        model = self._ensure_model(endpoint, stage, version, progress)
        alarms = self._ensure_alarms(endpoint, progress)
        handle = self._ensure_endpoint_config(endpoint, stage, version, model, progress)
        if current is not None and current.status == "Failed":
            why = f" ({current.failure_reason})" if current.failure_reason else ""
            progress(f"{endpoint} is Failed{why}; a Failed endpoint can only be deleted: deleting it first")
            self._delete_endpoint(endpoint, progress)
            current = None
        if current is None:
            with aws.call(f"CreateEndpoint {endpoint}"):
                self.sagemaker.create_endpoint(
                    EndpointName=endpoint,
                    EndpointConfigName=handle,
                    Tags=requests.endpoint_tags(self.config, stage),
                )
            action = "created"
        else:
            with aws.call(f"UpdateEndpoint {endpoint}"):
                self.sagemaker.update_endpoint(
                    EndpointName=endpoint,
                    EndpointConfigName=handle,
                    DeploymentConfig=requests.deployment_config(self.traffic, alarms),
                )
            action = "updated"
        progress(f"{action} {endpoint} with {handle} (version {version.version}); waiting until it serves")
        return self._wait(endpoint, handle, action, progress)

    def restore(self, stage: str, previous: Live | None, progress: Progress) -> str:
        endpoint = self.endpoint_name(stage)
        if previous is None or not previous.handle:
            self._delete_endpoint(endpoint, progress)
            return f"deleted {endpoint}: nothing was served before this deployment"
        with aws.call(f"UpdateEndpoint {endpoint}"):
            self.sagemaker.update_endpoint(
                EndpointName=endpoint, EndpointConfigName=previous.handle, DeploymentConfig=requests.restore_config()
            )
        back = self._wait(endpoint, previous.handle, "restored", progress)
        if back.status == IN_SERVICE:
            return f"{endpoint} serves the previous version {previous.version} again ({previous.handle})"
        return f"restoring the previous version {previous.version} of {endpoint} failed: {back.reason}; inspect it"

    def record_pass(self, stage: str, handle: str, result: SmokeResult) -> None:
        arn = self._config_arns.get(handle)
        if arn is None:
            described = self._describe("describe_endpoint_config", handle, EndpointConfigName=handle)
            if described is None:
                raise AwsError(f"endpoint config {handle} is gone: the smoke test's pass cannot be recorded")
            arn = described["EndpointConfigArn"]
        value = f"passed: {result.rows} rows at {self.now():%Y-%m-%dT%H:%M:%SZ}"
        with aws.call(f"AddTags {arn}"):
            self.sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": requests.TAG_SMOKE_TEST, "Value": value}])

    def _ensure_model(self, endpoint: str, stage: str, version: Version, progress: Progress) -> str:
        request = requests.model_request(self.config, endpoint, stage, version)
        name = request["ModelName"]
        if self._describe("describe_model", name, ModelName=name) is None:
            with aws.call(f"CreateModel {name}"):
                self.sagemaker.create_model(**request)
            progress(f"created model {name} from {version.package_arn}")
        return name

    def _ensure_alarms(self, endpoint: str, progress: Progress) -> list[str]:
        """The rollback alarms: created when absent, left as they are when present (tune them in CloudWatch)."""
        cloudwatch = self.session.client("cloudwatch")
        names = requests.alarm_names(endpoint)
        with aws.call(f"DescribeAlarms {', '.join(names)}"):
            present = {alarm["AlarmName"] for alarm in cloudwatch.describe_alarms(AlarmNames=names)["MetricAlarms"]}
        for request in requests.alarm_requests(self.config, endpoint):
            if request["AlarmName"] not in present:
                with aws.call(f"PutMetricAlarm {request['AlarmName']}"):
                    cloudwatch.put_metric_alarm(**request)
                progress(f"created alarm {request['AlarmName']}")
        return names

    def _ensure_endpoint_config(
        self, endpoint: str, stage: str, version: Version, model: str, progress: Progress
    ) -> str:
        request = requests.endpoint_config_request(self.config, endpoint, stage, version, model)
        name = request["EndpointConfigName"]
        described = self._describe("describe_endpoint_config", name, EndpointConfigName=name)
        if described is None:
            with aws.call(f"CreateEndpointConfig {name}"):
                self._config_arns[name] = self.sagemaker.create_endpoint_config(**request)["EndpointConfigArn"]
            progress(f"created endpoint config {name}")
        else:
            self._config_arns[name] = described["EndpointConfigArn"]
        return name

    def _wait(self, endpoint: str, handle: str, action: str, progress: Progress) -> Rollout:
        """DescribeEndpoint until it ends; rolled back when it went through RollingBack or serves another config."""
        started, seen, rolled_back = time.monotonic(), None, False
        while True:
            described = self._describe("describe_endpoint", endpoint, EndpointName=endpoint)
            if described is None:
                return Rollout(action, "Failed", handle, f"endpoint {endpoint} disappeared while it was changing")
            status = described["EndpointStatus"]
            rolled_back = rolled_back or status == "RollingBack"
            if status != seen:
                progress(f"{endpoint}: {status} after {time.monotonic() - started:.0f} s")
                seen = status
            if status in ENDED:
                reason = described.get("FailureReason")
                serving = described.get("EndpointConfigName")
                if status == IN_SERVICE and serving == handle and not rolled_back:
                    return Rollout(action, IN_SERVICE, handle)
                if status == IN_SERVICE:
                    why = reason or f"the alarms fired; it serves {serving} again"
                    return Rollout(action, "RolledBack", serving or handle, why)
                return Rollout(action, "Failed", handle, f"{status}: {reason or 'no reason given'}")
            self.sleep(self.poll_seconds)

    def _delete_endpoint(self, endpoint: str, progress: Progress) -> bool:
        """DeleteEndpoint, then DescribeEndpoint until it is gone; False when there was none."""
        from botocore.exceptions import ClientError

        with aws.call(f"DeleteEndpoint {endpoint}"):
            try:
                self.sagemaker.delete_endpoint(EndpointName=endpoint)
            except ClientError as error:
                if _missing(error):
                    return False
                raise
        progress(f"deleting {endpoint}")
        while self._describe("describe_endpoint", endpoint, EndpointName=endpoint) is not None:
            self.sleep(self.poll_seconds)
        progress(f"deleted {endpoint}")
        return True

    # ------------------------------------------------------------------------------------------------ undeploy

    def undeploy(self, stage: str, progress: Progress = lambda message: None) -> Undeployed:
        """DeleteEndpoint, then the endpoint configs and models named for it, and its rollback alarms."""
        endpoint = self.endpoint_name(stage)
        deleted = self._delete_endpoint(endpoint, progress)
        pattern = re.compile(re.escape(requests.versioned_prefix(endpoint)) + r"\d+-[0-9a-f]{8}")
        configs = self._named(
            "list_endpoint_configs",
            "EndpointConfigs",
            "EndpointConfigName",
            requests.versioned_prefix(endpoint),
            pattern,
        )
        for name in configs:
            with aws.call(f"DeleteEndpointConfig {name}"):
                self.sagemaker.delete_endpoint_config(EndpointConfigName=name)
        models = self._named("list_models", "Models", "ModelName", requests.versioned_prefix(endpoint), pattern)
        for name in models:
            with aws.call(f"DeleteModel {name}"):
                self.sagemaker.delete_model(ModelName=name)
        cloudwatch = self.session.client("cloudwatch")
        names = requests.alarm_names(endpoint)
        with aws.call(f"DescribeAlarms {', '.join(names)}"):
            present = [alarm["AlarmName"] for alarm in cloudwatch.describe_alarms(AlarmNames=names)["MetricAlarms"]]
        if present:
            with aws.call(f"DeleteAlarms {', '.join(present)}"):
                cloudwatch.delete_alarms(AlarmNames=present)
        return Undeployed(endpoint, deleted, tuple(configs), tuple(models), tuple(present))

    def _named(self, operation: str, field: str, key: str, prefix: str, pattern: re.Pattern[str]) -> list[str]:
        """Every page of a List* call with NameContains, keeping the names this tool gives (``pattern``)."""
        found: list[str] = []
        request: dict[str, Any] = {"NameContains": prefix, "MaxResults": 100}
        while True:
            with aws.call(f"{operation} {prefix}"):
                page = getattr(self.sagemaker, operation)(**request)
            found += [item[key] for item in page[field] if pattern.fullmatch(item[key])]
            if not page.get("NextToken"):
                return sorted(found)
            request["NextToken"] = page["NextToken"]

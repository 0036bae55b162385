"""CloudFormation templates read as the tests check them: YAML with the short-form tags (``!Ref``, ``!Sub``, ...)
kept as ``{tag: value}``, and the actions an IAM policy's statements grant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def _construct(loader: Any, node: Any) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


def load_template(path: Path) -> dict[str, Any]:
    """The template at ``path``, each short-form tag as a one-key mapping (``!Ref X`` -> ``{"Ref": "X"}``)."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: {suffix: _construct(loader, node)})
    return yaml.load(path.read_text(), Loader=Loader)


def actions(statements: list[dict[str, Any]]) -> set[str]:
    """Every action the statements name (``Action`` as one string or a list)."""
    found: set[str] = set()
    for statement in statements:
        listed = statement["Action"]
        found.update([listed] if isinstance(listed, str) else listed)
    return found


def create_stack(name: str, template: Path, parameters: dict[str, str], region: str) -> tuple[dict[str, str], set[str]]:
    """Create the stack in moto (inside ``mock_aws``): (its outputs, the resource types moto skipped, which the tests
    check on the template instead); the stack must have been created."""
    import re
    import warnings

    import boto3

    cloudformation = boto3.client("cloudformation", region_name=region)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cloudformation.create_stack(
            StackName=name,
            TemplateBody=template.read_text(),
            Parameters=[{"ParameterKey": key, "ParameterValue": value} for key, value in parameters.items()],
            Capabilities=["CAPABILITY_IAM"],
        )
        [stack] = cloudformation.describe_stacks(StackName=name)["Stacks"]  # moto parses the outputs here
    skipped = set(re.findall(r"parse (\S+) but it's not supported", " ".join(str(w.message) for w in caught)))
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    return {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}, skipped


def delivered_events(rule: str, target: str, samples: list[dict[str, Any]], region: str) -> list[dict[str, Any]]:
    """The sample events the deployed ``rule``'s pattern lets through, as EventBridge delivers them: the rule's
    ``target`` is swapped for an SQS queue (moto fills a transformer's values in without JSON quotes, so the real
    target is checked on the template), each sample is put, and the queue's messages are read back."""
    import json

    import boto3

    events, sqs = boto3.client("events", region_name=region), boto3.client("sqs", region_name=region)
    events.remove_targets(Rule=rule, Ids=[target])
    queue = sqs.create_queue(QueueName="matched")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_targets(Rule=rule, Targets=[{"Id": "probe", "Arn": queue_arn}])
    for sample in samples:
        entry = {
            "Source": sample["source"],
            "DetailType": sample["detail-type"],
            "Detail": json.dumps(sample["detail"]),
            "Resources": sample["resources"],
        }
        assert events.put_events(Entries=[entry])["FailedEntryCount"] == 0
    received = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
    return [json.loads(message["Body"]) for message in received]

"""Several tables in one work dir: a model package group holds the versions of one table's model.

DataQuality checks a run's raw feature columns against the data-quality baseline of its group's newest approved
version. A run of another table into that group used to fail there, after Preprocess, with a violation per column
and no word of the cause. :func:`check_group_columns` refuses such a run before anything runs, naming the columns
that differ and the way out: a group of the table's own (:func:`table_group_name`, derived from its columns and
label), or the switches that make the table the group's new model. :func:`trained_on` says what a version was
trained on (its columns, label and data), for ``llpipe models list``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.core.errors import UsageError, opt
from pipeline.core.names import (
    DATA_QUALITY_SUPPLIED_CONSTRAINTS,
    DATA_QUALITY_SUPPLIED_STATISTICS,
    REGISTER_NEW_DATA_QUALITY_BASELINE,
    SKIP_DATA_QUALITY_CHECK,
)
from pipeline.local.executions import ExecutionStore
from pipeline.local.registry import GROUP_NAME_PATTERN, LocalRegistry, ModelPackage
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir

GROUP_NAME_LIMIT = 63  # CreateModelPackageGroup's ModelPackageGroupName
DIGEST_LENGTH = 8
SHOWN_COLUMNS = 5  # columns named in a message; the rest counted


def table_group_name(group: str, features: Sequence[str], label: str) -> str:
    """``<group>-<digest>``: a group of the table whose feature columns (in order) and label these are, a short
    content hash so the same table always gets the same name; cut to the 63 characters SageMaker allows."""
    digest = hashlib.sha256(json.dumps([list(features), label]).encode()).hexdigest()[:DIGEST_LENGTH]
    stem = group[: GROUP_NAME_LIMIT - DIGEST_LENGTH - 1].rstrip("-")
    name = f"{stem}-{digest}"
    assert GROUP_NAME_PATTERN.fullmatch(name), name
    return name


def baseline_columns(s3: LocalS3, package: ModelPackage) -> list[str] | None:
    """The feature columns of ``package``'s data-quality baseline (its constraints file), None when it has none
    or the file cannot be read."""
    uri = package.drift_check_data_quality.get("Constraints")
    if not uri:
        return None
    try:
        features = json.loads(s3.path(uri).read_text()).get("features")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(features, list):
        return None
    return [str(feature.get("name")) for feature in features if isinstance(feature, dict)]


class OtherTable(UsageError):
    """A run of another table than its group's approved version; ``own_group`` is a group of the table's own."""

    def __init__(self, message: str, *, own_group: str, expected: str) -> None:
        super().__init__(message, expected=expected)
        self.own_group = own_group


def check_group_columns(
    workdir: Workdir, group: str, values: Mapping[str, Any], features: Sequence[str], label: str
) -> None:
    """Refuse (:class:`OtherTable`), before anything runs, a run whose feature columns differ from those of
    ``group``'s newest approved version's baseline, which its DataQuality step checks it against; nothing when the
    check is skipped, a baseline is supplied, or the group has no approved baseline."""
    if _true(values.get(SKIP_DATA_QUALITY_CHECK)):
        return
    if values.get(DATA_QUALITY_SUPPLIED_STATISTICS) or values.get(DATA_QUALITY_SUPPLIED_CONSTRAINTS):
        return
    if not workdir.registry_db.exists():
        return
    package = LocalRegistry(workdir.registry_db).last_approved(group)
    if package is None:
        return
    approved = baseline_columns(LocalS3(workdir.s3), package)
    if approved is None or sorted(approved) == sorted(features):
        return
    missing = [column for column in approved if column not in features]
    new = [column for column in features if column not in approved]
    own = table_group_name(group, features, label)
    raise OtherTable(
        f"the data's feature columns differ from those of version {package.version} of model package group "
        f"{group}, the approved version its DataQuality step checks this run against (the data lacks "
        f"{_columns(missing)} of that version and has {_columns(new)} it does not): each table needs a model "
        "package group of its own; run this table in its "
        f"own group with {opt('model_package_group', own)} (or the config setting model_package_group), or make "
        f"it this group's new model with {opt(SKIP_DATA_QUALITY_CHECK, 'true')} and "
        f"{opt(REGISTER_NEW_DATA_QUALITY_BASELINE, 'true')}",
        own_group=own,
        expected=f"the feature columns of version {package.version}: {_columns(approved)}",
    )


def trained_on(workdir: Workdir, package: ModelPackage) -> dict[str, Any]:
    """What ``package`` was trained on: its feature columns (from its data-quality baseline), the label column
    and the data (from the execution that registered it); None for what the work dir no longer holds."""
    columns = baseline_columns(LocalS3(workdir.s3), package)
    label = data = None
    execution_id = (package.source_execution or "").rsplit("/", 1)[-1]
    if execution_id:
        try:
            parameters = ExecutionStore(workdir.executions).load(execution_id).parameters
        except (KeyError, OSError, ValueError):
            parameters = {}
        label = parameters.get("LabelColumn")
        data = parameters.get("InputDataUrl")
    return {"columns": columns, "label": label, "data": data}


def _columns(names: Sequence[str]) -> str:
    shown = ", ".join(names[:SHOWN_COLUMNS])
    more = f" and {len(names) - SHOWN_COLUMNS} more" if len(names) > SHOWN_COLUMNS else ""
    return f"{len(names)} column(s) ({shown}{more})" if names else "no column"


def _true(value: Any) -> bool:
    return value is True or str(value).lower() == "true"

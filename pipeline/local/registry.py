"""The local model registry: SageMaker's model package groups and versions, kept in SQLite under the work dir.

It follows the CreateModelPackage contract the pipeline's RegisterModel step relies on: the group is created when
missing, versions count up from 1 per group, the ARN is ``arn:aws:sagemaker:<region>:<account>:model-package/<group>/
<version>`` (lower-cased, as SageMaker writes it), and the approval status is one of SageMaker's three. Every write
runs in a ``BEGIN IMMEDIATE`` transaction, so registrations from several processes never lose or repeat a version.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipeline.core.images import is_linear_learner

APPROVAL_STATUSES = ("Approved", "Rejected", "PendingManualApproval")
DEFAULT_APPROVAL_STATUS = "PendingManualApproval"
GROUP_NAME_PATTERN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
BUSY_TIMEOUT_SECONDS = 60.0
# the lock is awaited in slices this long, so a stop (a signal in the main thread, ``stop`` in a job's) ends the wait
LOCK_POLL_SECONDS = 0.1
METADATA_PUNCTUATION = "_.:/=+-@"
MAX_CONTAINERS = 15  # CreateModelPackage's limit on InferenceSpecification.Containers

SCHEMA = """
CREATE TABLE IF NOT EXISTS model_package_groups (
    name TEXT PRIMARY KEY COLLATE NOCASE,
    arn TEXT NOT NULL UNIQUE,
    created_time TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS model_packages (
    group_name TEXT NOT NULL COLLATE NOCASE REFERENCES model_package_groups (name),
    version INTEGER NOT NULL,
    arn TEXT NOT NULL UNIQUE,
    approval_status TEXT NOT NULL,
    approval_description TEXT,
    description TEXT,
    created_time TEXT NOT NULL,
    last_modified_time TEXT NOT NULL,
    image TEXT NOT NULL,
    model_data_url TEXT NOT NULL,
    metrics_report_uri TEXT,
    metrics TEXT,
    content_types TEXT NOT NULL,
    response_types TEXT NOT NULL,
    realtime_instance_types TEXT NOT NULL,
    transform_instance_types TEXT NOT NULL,
    source_execution TEXT,
    customer_metadata TEXT NOT NULL,
    request TEXT NOT NULL,
    PRIMARY KEY (group_name, version)
);
"""


class RegistryError(Exception):
    """A request the registry refuses, or a model package it does not hold; the message says which and why."""


@dataclass(frozen=True)
class ModelPackageGroup:
    """One model package group: the versions of one model over time."""

    name: str
    arn: str
    created_time: datetime
    package_count: int

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "created_time": self.created_time.isoformat()}


@dataclass(frozen=True)
class ModelPackage:
    """One registered model version with the evidence a reviewer needs: artifact, image, report and its metrics."""

    group: str
    version: int
    arn: str
    approval_status: str
    created_time: datetime
    last_modified_time: datetime
    image: str
    model_data_url: str
    metrics_report_uri: str | None
    metrics: Mapping[str, Any] | None
    content_types: tuple[str, ...]
    response_types: tuple[str, ...]
    realtime_instance_types: tuple[str, ...]
    transform_instance_types: tuple[str, ...]
    source_execution: str | None
    approval_description: str | None = None
    description: str | None = None
    customer_metadata: Mapping[str, str] = field(default_factory=dict)
    # ModelMetrics.ModelDataQuality and DriftCheckBaselines.ModelDataQuality of the request: {"Statistics": uri,
    # "Constraints": uri}, empty when the request had none
    data_quality: Mapping[str, str] = field(default_factory=dict)
    drift_check_data_quality: Mapping[str, str] = field(default_factory=dict)
    # InferenceSpecification.Containers as registered: the inference pipeline (featurizer, Linear Learner, labels)
    containers: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (times as ISO 8601, tuples as lists)."""
        values = asdict(self)
        values["created_time"] = self.created_time.isoformat()
        values["last_modified_time"] = self.last_modified_time.isoformat()
        for name in ("content_types", "response_types", "realtime_instance_types", "transform_instance_types"):
            values[name] = list(values[name])
        values["containers"] = [dict(container) for container in self.containers]
        return values


def group_arn(group: str, *, region: str, account: str) -> str:
    return f"arn:aws:sagemaker:{region}:{account}:model-package-group/{group.lower()}"


def package_arn(group: str, version: int, *, region: str, account: str) -> str:
    return f"arn:aws:sagemaker:{region}:{account}:model-package/{group.lower()}/{version}"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _required(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    value = mapping.get(key)
    if value is None or value == "" or value == []:
        raise RegistryError(f"CreateModelPackage request: {where}{key} is required")
    return value


def _strings(mapping: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = mapping.get(key) or []
    if not isinstance(values, list) or not all(isinstance(value, str) and value for value in values):
        raise RegistryError(f"CreateModelPackage request: {where}{key} must be a list of strings, got {values!r}")
    return tuple(values)


def _check_status(status: Any) -> str:
    if status not in APPROVAL_STATUSES:
        raise RegistryError(f"approval status {status!r} is not one of {', '.join(APPROVAL_STATUSES)}")
    return status


def _metadata_text(text: str, longest: int) -> bool:
    """SageMaker's CustomerMetadata key/value: 1..``longest`` letters, separators, numbers or ``_.:/=+-@``."""
    allowed = all(unicodedata.category(ch)[0] in "LZN" or ch in METADATA_PUNCTUATION for ch in text)
    return 1 <= len(text) <= longest and allowed


def _check_customer_metadata(metadata: Mapping[str, str]) -> None:
    """The limits CreateModelPackage enforces: at most 50 entries, keys of 128 and values of 256 allowed characters."""
    if len(metadata) > 50:
        raise RegistryError(
            f"CreateModelPackage request: CustomerMetadataProperties has {len(metadata)} entries, at most 50 allowed"
        )
    for key, value in metadata.items():
        if not _metadata_text(key, 128) or not _metadata_text(value, 256):
            raise RegistryError(
                f"CreateModelPackage request: CustomerMetadataProperties {key!r}: {value!r}: keys of 1-128 and values "
                f"of 1-256 characters may hold only letters, spaces, numbers and {METADATA_PUNCTUATION}"
            )


@dataclass(frozen=True)
class _Registration:
    """The fields of a CreateModelPackage request the registry keeps, validated."""

    group: str
    approval_status: str
    image: str
    model_data_url: str
    content_types: tuple[str, ...]
    response_types: tuple[str, ...]
    realtime_instance_types: tuple[str, ...]
    transform_instance_types: tuple[str, ...]
    metrics_report_uri: str | None
    source_execution: str | None
    description: str | None
    customer_metadata: dict[str, str]

    @classmethod
    def from_request(cls, request: Mapping[str, Any]) -> _Registration:
        group = _required(request, "ModelPackageGroupName", "")
        if not isinstance(group, str) or not GROUP_NAME_PATTERN.fullmatch(group):
            raise RegistryError(
                f"CreateModelPackage request: ModelPackageGroupName {group!r} must be 1-63 letters, digits or hyphens, "
                "starting and ending with a letter or digit"
            )
        status = _check_status(request.get("ModelApprovalStatus") or DEFAULT_APPROVAL_STATUS)
        inference = _required(request, "InferenceSpecification", "")
        containers = _required(inference, "Containers", "InferenceSpecification.")
        if not isinstance(containers, list) or not 1 <= len(containers) <= MAX_CONTAINERS:
            raise RegistryError(
                f"CreateModelPackage request: InferenceSpecification.Containers must hold 1 to {MAX_CONTAINERS} "
                "containers"
            )
        for index, container in enumerate(containers):
            where = f"InferenceSpecification.Containers[{index}]."
            _required(container, "Image", where)
            url = _required(container, "ModelDataUrl", where)
            if not str(url).startswith("s3://"):
                raise RegistryError(f"CreateModelPackage request: {where}ModelDataUrl {url!r} is not an s3:// URI")
        # the algorithm's container (the inference pipeline's middle one) is the version's image and artifact
        container = next((c for c in containers if is_linear_learner(str(c["Image"]))), containers[0])
        image, model_data_url = container["Image"], container["ModelDataUrl"]
        statistics = (request.get("ModelMetrics") or {}).get("ModelQuality", {}).get("Statistics")
        report_uri = None
        if statistics is not None:
            report_uri = _required(statistics, "S3Uri", "ModelMetrics.ModelQuality.Statistics.")
            if not str(report_uri).startswith("s3://"):
                raise RegistryError(f"CreateModelPackage request: metrics report {report_uri!r} is not an s3:// URI")
        metadata = request.get("CustomerMetadataProperties") or {}
        if not isinstance(metadata, Mapping) or not all(isinstance(v, str) for v in metadata.values()):
            raise RegistryError("CreateModelPackage request: CustomerMetadataProperties must map strings to strings")
        _check_customer_metadata(metadata)
        where = "InferenceSpecification."
        return cls(
            group=group,
            approval_status=status,
            image=str(image),
            model_data_url=str(model_data_url),
            content_types=_strings(inference, "SupportedContentTypes", where),
            response_types=_strings(inference, "SupportedResponseMIMETypes", where),
            realtime_instance_types=_strings(inference, "SupportedRealtimeInferenceInstanceTypes", where),
            transform_instance_types=_strings(inference, "SupportedTransformInstanceTypes", where),
            metrics_report_uri=report_uri,
            source_execution=(request.get("MetadataProperties") or {}).get("GeneratedBy"),
            description=request.get("ModelPackageDescription"),
            customer_metadata=dict(metadata),
        )


class LocalRegistry:
    """Model package groups and versions in one SQLite file; safe to use from several processes at once."""

    def __init__(self, db_path: Path, stop: threading.Event | None = None) -> None:
        self.db_path = Path(db_path)
        self.stop = stop  # set: a wait for another process's lock ends at once with a RegistryError

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[sqlite3.Connection]:
        """One connection, one transaction; writers take the write lock up front (BEGIN IMMEDIATE)."""
        with self._database_errors():
            yield from self._transaction_on(write)

    @contextmanager
    def _database_errors(self) -> Iterator[None]:
        """SQLite errors (a damaged or read-only file, a folder that cannot be made) as one line naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            raise RegistryError(
                f"{self.db_path}: the model registry cannot be used ({error}); if it is damaged, move it aside "
                "(a new one is created) or restore it; if it is read-only, make it writable"
            ) from None
        except OSError as error:
            raise RegistryError(f"{self.db_path}: {error.strerror or error}; check the work dir") from None

    def _transaction_on(self, write: bool) -> Iterator[sqlite3.Connection]:
        if write:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.db_path, timeout=LOCK_POLL_SECONDS, isolation_level=None)
        connection.row_factory = sqlite3.Row
        try:
            self._begin(connection, "BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                if write:  # executescript() would commit the transaction, so one statement at a time
                    for statement in filter(str.strip, SCHEMA.split(";")):
                        connection.execute(statement)
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        finally:
            connection.close()

    def _begin(self, connection: sqlite3.Connection, statement: str) -> None:
        """Start the transaction, waiting up to ``BUSY_TIMEOUT_SECONDS`` for another process's lock in short slices:
        SQLite's own busy wait is not interrupted by signals, so a stop waited for the whole timeout. A read's
        ``BEGIN`` takes no lock: its first read does, so that read is awaited in slices too (it waited the whole busy
        timeout, a run's pre-run registry checks among them)."""
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        self._await_lock(connection, statement, deadline)
        if statement == "BEGIN":
            self._await_lock(connection, "SELECT count(*) FROM sqlite_master", deadline)
        # held: what is left to wait for (readers ending while this commits) is short
        connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")

    def _await_lock(self, connection: sqlite3.Connection, statement: str, deadline: float) -> None:
        """Run ``statement`` once another process's lock lets it, retried every ``LOCK_POLL_SECONDS`` until
        ``deadline``; a stop (``stop``, or a signal's handler raising between slices) ends the wait at once."""
        while True:
            try:
                connection.execute(statement)
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error):
                    raise
                if time.monotonic() >= deadline:
                    raise RegistryError(
                        f"{self.db_path}: another process has held the model registry's lock for "
                        f"{BUSY_TIMEOUT_SECONDS:g} s; try again when it has ended"
                    ) from None
            if self.stop is not None and self.stop.is_set():
                raise RegistryError(
                    f"{self.db_path}: stopped while waiting for the model registry's lock (another process holds it)"
                )

    def register(
        self, request: Mapping[str, Any], *, metrics: Mapping[str, Any] | None = None, region: str, account: str
    ) -> ModelPackage:
        """Creates the next version of the request's group (creating the group if missing), as CreateModelPackage."""
        registration = _Registration.from_request(request)
        now = _now().isoformat()
        with self._transaction(write=True) as db:
            db.execute(
                "INSERT OR IGNORE INTO model_package_groups (name, arn, created_time) VALUES (?, ?, ?)",
                (registration.group, group_arn(registration.group, region=region, account=account), now),
            )
            # Group names are case-insensitive, as in SageMaker: the group keeps the spelling it was created with.
            (group,) = db.execute(
                "SELECT name FROM model_package_groups WHERE name = ?", (registration.group,)
            ).fetchone()
            (latest,) = db.execute(
                "SELECT COALESCE(MAX(version), 0) FROM model_packages WHERE group_name = ?", (group,)
            ).fetchone()
            version = latest + 1
            db.execute(
                "INSERT INTO model_packages (group_name, version, arn, approval_status, description, created_time,"
                " last_modified_time, image, model_data_url, metrics_report_uri, metrics, content_types,"
                " response_types, realtime_instance_types, transform_instance_types, source_execution,"
                " customer_metadata, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    group,
                    version,
                    package_arn(group, version, region=region, account=account),
                    registration.approval_status,
                    registration.description,
                    now,
                    now,
                    registration.image,
                    registration.model_data_url,
                    registration.metrics_report_uri,
                    json.dumps(metrics) if metrics is not None else None,
                    json.dumps(registration.content_types),
                    json.dumps(registration.response_types),
                    json.dumps(registration.realtime_instance_types),
                    json.dumps(registration.transform_instance_types),
                    registration.source_execution,
                    json.dumps(registration.customer_metadata),
                    json.dumps(request, default=str),
                ),
            )
            return self._package(db, group, version)

    def list_groups(self) -> list[ModelPackageGroup]:
        """Every group, oldest first, with its number of versions."""
        if not self.db_path.exists():
            return []
        with self._transaction(write=False) as db:
            if not self._has_schema(db):
                return []
            rows = db.execute(
                "SELECT g.name, g.arn, g.created_time, COUNT(p.version) AS package_count FROM model_package_groups g"
                " LEFT JOIN model_packages p ON p.group_name = g.name GROUP BY g.name ORDER BY g.created_time, g.name"
            ).fetchall()
        return [
            ModelPackageGroup(
                row["name"], row["arn"], datetime.fromisoformat(row["created_time"]), row["package_count"]
            )
            for row in rows
        ]

    def list_packages(self, group: str | None = None) -> list[ModelPackage]:
        """Every version of ``group`` (or of every group), by group then version."""
        if not self.db_path.exists():
            return []
        with self._transaction(write=False) as db:
            if not self._has_schema(db):
                return []
            if group is None:
                rows = db.execute("SELECT * FROM model_packages ORDER BY group_name, version").fetchall()
            else:
                rows = db.execute(
                    "SELECT * FROM model_packages WHERE group_name = ? ORDER BY version", (group,)
                ).fetchall()
        return [_from_row(row) for row in rows]

    def last_approved(self, group: str) -> ModelPackage | None:
        """The newest Approved version of ``group`` (what SageMaker's QualityCheck step takes its baseline from)."""
        approved = [package for package in self.list_packages(group) if package.approval_status == "Approved"]
        return max(approved, key=lambda package: (package.created_time, package.version), default=None)

    def describe(self, arn_or_group_version: str) -> ModelPackage:
        """One version, named by its ARN or as ``group/version`` (DescribeModelPackage accepts both)."""
        if not self.db_path.exists():
            raise RegistryError(f"model package {arn_or_group_version} not found: no registry at {self.db_path}")
        with self._transaction(write=False) as db:
            if not self._has_schema(db):
                raise RegistryError(f"model package {arn_or_group_version} not found: the registry is empty")
            return _from_row(self._find(db, arn_or_group_version))

    def update_status(self, arn: str, status: str, description: str | None = None) -> ModelPackage:
        """Sets the approval status (and its description), as UpdateModelPackage; returns the updated version."""
        _check_status(status)
        with self._transaction(write=True) as db:
            row = self._find(db, arn)
            db.execute(
                "UPDATE model_packages SET approval_status = ?, approval_description = ?, last_modified_time = ?"
                " WHERE arn = ?",
                (status, description, _now().isoformat(), row["arn"]),
            )
            return self._package(db, row["group_name"], row["version"])

    def update_customer_metadata(self, arn: str, properties: Mapping[str, str]) -> ModelPackage:
        """Adds or replaces ``properties`` in the version's customer metadata, as UpdateModelPackage's
        CustomerMetadataProperties (the service's limits apply to the merged whole); returns the updated version."""
        with self._transaction(write=True) as db:
            row = self._find(db, arn)
            merged = {**json.loads(row["customer_metadata"]), **properties}
            _check_customer_metadata(merged)
            db.execute(
                "UPDATE model_packages SET customer_metadata = ?, last_modified_time = ? WHERE arn = ?",
                (json.dumps(merged), _now().isoformat(), row["arn"]),
            )
            return self._package(db, row["group_name"], row["version"])

    @staticmethod
    def _has_schema(db: sqlite3.Connection) -> bool:
        return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'model_packages'").fetchone() is not None

    @staticmethod
    def _find(db: sqlite3.Connection, arn_or_group_version: str) -> sqlite3.Row:
        if arn_or_group_version.startswith("arn:"):
            row = db.execute("SELECT * FROM model_packages WHERE arn = ?", (arn_or_group_version.lower(),)).fetchone()
        else:
            group, _, version = arn_or_group_version.rpartition("/")
            if not group or not version.isdigit():
                raise RegistryError(
                    f"model package {arn_or_group_version!r}: expected an ARN or <group>/<version>, e.g. my-group/3"
                )
            row = db.execute(
                "SELECT * FROM model_packages WHERE group_name = ? AND version = ?", (group, int(version))
            ).fetchone()
        if row is None:
            raise RegistryError(f"model package {arn_or_group_version} not found")
        return row

    @staticmethod
    def _package(db: sqlite3.Connection, group: str, version: int) -> ModelPackage:
        row = db.execute(
            "SELECT * FROM model_packages WHERE group_name = ? AND version = ?", (group, version)
        ).fetchone()
        return _from_row(row)


def _baseline_uris(request: Mapping[str, Any], section: str) -> dict[str, str]:
    """``{"Statistics": uri, "Constraints": uri}`` of a request's ``<section>.ModelDataQuality``."""
    quality = (request.get(section) or {}).get("ModelDataQuality") or {}
    return {kind: source["S3Uri"] for kind, source in quality.items() if isinstance(source, dict) and "S3Uri" in source}


def _from_row(row: sqlite3.Row) -> ModelPackage:
    """The model package of one row; ``RegistryError`` naming the version and the column when a value is damaged
    (the registry edited outside llpipe): once a traceback from `llpipe models list`."""
    try:
        return _package_of(row)
    except (ValueError, TypeError, KeyError) as error:  # json.JSONDecodeError is a ValueError
        column = next((name for name in JSON_COLUMNS if not _is_json(row[name])), None)
        what = (
            f"column {column!r} is not JSON: {str(row[column])[:60]!r}"
            if column
            else f"{type(error).__name__}: {error}"
        )
        raise RegistryError(
            f"model package {row['group_name']} version {row['version']}: damaged registry entry ({what}); "
            "it was changed outside llpipe: restore registry.db from a backup or delete that version's row"
        ) from None


JSON_COLUMNS = (
    "request",
    "metrics",
    "content_types",
    "response_types",
    "realtime_instance_types",
    "transform_instance_types",
    "customer_metadata",
)


def _is_json(text: Any) -> bool:
    if text is None:
        return True
    try:
        json.loads(text)
    except (ValueError, TypeError):
        return False
    return True


def _package_of(row: sqlite3.Row) -> ModelPackage:
    request = json.loads(row["request"])
    return ModelPackage(
        group=row["group_name"],
        version=row["version"],
        arn=row["arn"],
        approval_status=row["approval_status"],
        created_time=datetime.fromisoformat(row["created_time"]),
        last_modified_time=datetime.fromisoformat(row["last_modified_time"]),
        image=row["image"],
        model_data_url=row["model_data_url"],
        metrics_report_uri=row["metrics_report_uri"],
        metrics=json.loads(row["metrics"]) if row["metrics"] is not None else None,
        content_types=tuple(json.loads(row["content_types"])),
        response_types=tuple(json.loads(row["response_types"])),
        realtime_instance_types=tuple(json.loads(row["realtime_instance_types"])),
        transform_instance_types=tuple(json.loads(row["transform_instance_types"])),
        source_execution=row["source_execution"],
        approval_description=row["approval_description"],
        description=row["description"],
        customer_metadata=json.loads(row["customer_metadata"]),
        data_quality=_baseline_uris(request, "ModelMetrics"),
        drift_check_data_quality=_baseline_uris(request, "DriftCheckBaselines"),
        containers=tuple((request.get("InferenceSpecification") or {}).get("Containers") or ()),
    )

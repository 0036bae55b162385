"""Shared pytest fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.container import Container
from support.mlflow_store import fresh_store, migrated_template
from support.protobuf_oracle import compile_record_protobuf

from pipeline.core.forkserver import ForkServers, sharing
from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
from pipeline.local.environments import EnvironmentBuildError, ImageEnvironments, JobEnvironment

# MLflow tracking is on by default (pipeline.api.tracking); the suite's runs leave it off, so that each temporary work
# dir does not migrate a SQLite store of its own: tests/test_mlflow_tracking.py turns it on where it is the subject
os.environ.setdefault("LLPIPE_MLFLOW_TRACKING", "false")


@pytest.fixture(scope="session")
def record_protobuf(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The aialgs.data protobuf messages compiled from tests/support/recordio.proto: an oracle independent of the
    codec."""
    return compile_record_protobuf(tmp_path_factory.mktemp("record_protobuf"))


@pytest.fixture(scope="session")
def image_environment() -> JobEnvironment:
    """The scikit-learn image's environment, from the shared cache dir (built once, under a lock, if missing).

    Where it cannot be built (no Python 3.9, no network) the tests that need it skip, except on CI (CI=true), where
    that is a failure: CI's machine has Python 3.9 and must run the container code on it."""
    try:
        environment = ImageEnvironments.default().ensure(DEFAULT_PROCESSING_IMAGE)
    except EnvironmentBuildError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the {DEFAULT_PROCESSING_IMAGE.key} environment is required on CI: {error}")
        pytest.skip(f"the {DEFAULT_PROCESSING_IMAGE.key} environment is not available: {error}")
    assert environment.exact, environment.reason
    return environment


@pytest.fixture(scope="session")
def container(image_environment: JobEnvironment, tmp_path_factory: pytest.TempPathFactory) -> Container:
    """Runs the repository's code bundles as the scikit-learn image does."""
    return Container(image_environment, tmp_path_factory.mktemp("code"))


@pytest.fixture(scope="session")
def mlflow_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return migrated_template(tmp_path_factory.mktemp("mlflow-template"))


@pytest.fixture
def mlflow_sqlite_uri(mlflow_template: Path, tmp_path: Path) -> str:
    """A new, empty MLflow SQLite store of this test's own (copied from the session's migrated template)."""
    return fresh_store(mlflow_template, tmp_path)


@pytest.fixture(scope="session", autouse=True)
def definition_cache_of_this_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Definitions cached by this test session stay in it: never the user's cache, never a previous run's. Only the
    definitions move: the image environments stay in the shared cache, built once per machine (minutes).

    The xdist workers of one session share the folder (the run's base temp folder, above each worker's), so a
    definition built by one worker is read by the other instead of built again (seconds each; entries are written
    atomically, so a concurrent reader sees a whole entry or none)."""
    previous = os.environ.get("LLPIPE_DEFINITION_CACHE_DIR")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "llpipe-definitions"
        shared.mkdir(exist_ok=True)
    else:
        shared = tmp_path_factory.mktemp("llpipe-definitions")
    os.environ["LLPIPE_DEFINITION_CACHE_DIR"] = str(shared)
    yield
    if previous is None:
        os.environ.pop("LLPIPE_DEFINITION_CACHE_DIR", None)
    else:
        os.environ["LLPIPE_DEFINITION_CACHE_DIR"] = previous


@pytest.fixture(scope="session", autouse=True)
def fork_servers_of_this_worker() -> Iterator[ForkServers]:
    """One pool of fork servers for every local run this worker starts in its own thread (``sharing``): each job
    kind's libraries are imported once per worker, not once per run. Runs in a subprocess (``llpipe run`` as a
    command) or in another thread have their own, as a user's runs do."""
    with ForkServers() as pool, sharing(pool):
        yield pool


# Modules whose module-scoped fixtures are expensive (a real local run, a served model, a definition built by the
# SDK, a CodeBuild run): under xdist (`make test` runs `-n 2`) all their tests go to one worker, so each fixture is set
# up once per session instead of once per worker that happens to get one of the module's tests (the CodeBuild run
# once took 60 s on each worker). Every other test is still dealt out one by one. Modules are named by file name, in
# whichever tier folder they are (file names are unique across the folders: pytest imports them by that name).
GROUPED_MODULES = frozenset(
    {
        "test_api",
        "test_bad_input_errors",
        "test_buildspec",
        "test_dag",
        "test_deploy_local",
        "test_docs",
        "test_encoding_end_to_end",
        "test_linear_learner_jobs",
        "test_local_limits",
        "test_monitor",
        "test_monitor_training_file",
        "test_offset_columns_end_to_end",
        "test_row_ids_and_splits",
        "test_scaling_study",
        "test_serve",
        "test_serve_client_faults",
        "test_several_tables",
        "test_state_left_deploy",
        "test_tuning_local",
    }
)


# Modules that build pipeline definitions with the SDK: under xdist they run on one worker, as one unit, so the SDK
# is imported (seconds of pydantic models) and each configuration's definition built (the definition cache is per
# worker) in one process instead of in both. A module with one such build is here too: test_csv_carriage_returns
# (`llpipe run` builds the definition before it reads the data), test_schema (a dry-run start), test_error_words.
# The modules that scan the project's source are in the same unit (test_error_words is one of them): support/sources.py
# parses each file once per process, so the library is parsed once per session rather than by each module on whichever
# worker it lands on (test_layers did at import, on both): test_content_types, test_layers, test_names, test_public_api.
SDK_MODULES = frozenset(
    {
        "test_content_types",
        "test_csv_carriage_returns",
        "test_definition",
        "test_definition_cache",
        "test_error_words",
        "test_layers",
        "test_mlflow_sagemaker",
        "test_names",
        "test_offline_sdk",
        "test_parameter_table",
        "test_public_api",
        "test_sagemaker_api",
        "test_sagemaker_inspect",
        "test_sagemaker_ops",
        "test_schema",
        "test_sizing_terabyte",
        "test_tuning_definition",
    }
)


# Modules that log to a real ``mlflow server`` (tests/integration/conftest.py's ``mlflow_server``, ~10 s of CPU to
# start and stop): under xdist they run on one worker, as one unit, so the session starts one server, not one a module.
# In this order: test_mlflow_tracking's module fixture runs two local runs while the server comes up, where
# test_mlflow_in_job's waits for it at once.
MLFLOW_SERVER_MODULES = ("test_mlflow_tracking", "test_mlflow_in_job")

# What each test took (setup, call and teardown, seconds) in the runs before, kept in pytest's cache by the xdist
# controller: the scheduler deals the costliest work first. A test never recorded (a new one, or no cache: a fresh
# checkout, ``-p no:cacheprovider``) counts as a typical test of its tier.
SECONDS_KEY = "llpipe/test-seconds"
UNRECORDED_SECONDS = {"integration": 2.0, "contract": 0.3, "unit": 0.1}


def _tier(nodeid: str) -> str:
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "unit"


def _recorded(config: pytest.Config) -> dict[str, float]:
    cache = getattr(config, "cache", None)
    return dict(cache.get(SECONDS_KEY, {})) if cache is not None else {}


class _Costs:
    """Sums each test's phases as the xdist controller receives them (or a run without xdist), and records them over
    those of the runs before (a test not run this time keeps its figure)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is not None and self.seconds:
            measured = {nodeid: round(seconds, 3) for nodeid, seconds in self.seconds.items()}
            cache.set(SECONDS_KEY, {**_recorded(self.config), **measured})


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's reports reach the controller, which records them
        config.pluginmanager.register(_Costs(config), "llpipe-test-costs")


def dealing_order(collection: list[str], scope_of: Any, seconds: dict[str, float]) -> list[tuple[str, list[str]]]:
    """The units of work (scope, its tests) in the order to deal them: costliest first, each unit's cost the sum of
    its tests' recorded (or typical) seconds, so the long groups start early and the short tests fill the end, and
    the two workers finish together. The single tests of one module stay together in this order (a worker runs them
    one after another, so a module fixture of theirs is set up once a worker), ranked by the module's total; within
    a unit and a module, collection order, the mlflow-server unit's modules in MLFLOW_SERVER_MODULES' order."""
    cost = {nodeid: seconds.get(nodeid, UNRECORDED_SECONDS.get(_tier(nodeid), 0.1)) for nodeid in collection}
    units: dict[str, list[str]] = {}
    for nodeid in collection:
        units.setdefault(scope_of(nodeid), []).append(nodeid)
    server_rank = {name: rank for rank, name in enumerate(MLFLOW_SERVER_MODULES)}
    units["mlflow-server"] = sorted(
        units.get("mlflow-server", []), key=lambda nodeid: server_rank[Path(nodeid.split("::", 1)[0]).stem]
    )
    blocks: dict[str, list[tuple[str, list[str]]]] = {}  # a grouped unit alone; a module's single tests together
    for scope, nodeids in units.items():
        if not nodeids:
            continue
        single = scope == nodeids[0] and len(nodeids) == 1
        blocks.setdefault(f"module:{nodeids[0].split('::', 1)[0]}" if single else scope, []).append((scope, nodeids))
    ranked = sorted(blocks.values(), key=lambda block: -sum(cost[n] for _, nodeids in block for n in nodeids))
    return [unit for block in ranked for unit in block]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """For the default ``--dist load``: xdist's load-scope scheduler with a module of GROUPED_MODULES as one unit,
    the SDK_MODULES together as one unit, the MLFLOW_SERVER_MODULES together as one unit, and any other test as a
    unit of its own, dealt in ``dealing_order`` (xdist's own deals the scopes with the most tests first, whatever
    they cost). Any other ``--dist`` is left as asked."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupedModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = Path(nodeid.split("::", 1)[0]).stem
            if module in SDK_MODULES:
                return "sdk-definitions"
            if module in MLFLOW_SERVER_MODULES:
                return "mlflow-server"
            return nodeid.split("::", 1)[0] if module in GROUPED_MODULES else nodeid

        def schedule(self) -> None:
            """xdist's first distribution (LoadScopeScheduling.schedule) with the work queue in dealing order."""
            if self.collection is not None or not self.collection_is_completed:
                super().schedule()
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(next(iter(self.registered_collections.values())))
            if not self.collection:
                return
            for scope, nodeids in dealing_order(self.collection, self._split_scope, _recorded(config)):
                self.workqueue[scope] = dict.fromkeys(nodeids, False)
            for _ in range(len(self.nodes) - len(self.workqueue)):  # more workers than work: end the spare ones
                spare, _assigned = self.assigned_work.popitem()
                spare.shutdown()
            for node in self.nodes:
                self._assign_work_unit(node)
            for node in self.nodes:  # each starts with two units where there are enough (xdist's #277)
                self._reschedule(node)
            if not self.workqueue:
                for node in self.nodes:
                    node.shutdown()

    return GroupedModules(config, log)

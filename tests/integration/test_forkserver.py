"""Fork servers (``pipeline.core.forkserver``): a job forked by a server is, as far as it can tell, the process a fresh
interpreter would have been: real servers, real jobs, compared with real fresh processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.forkserver import SETTING, ForkServers
from pipeline.core.processes import kill_group
from pipeline.core.processes import start as start_fresh

PRELOAD = ("numpy",)
IMAGE_PYTHONS = sorted(Path.home().glob(".cache/llpipe/envs/sklearn-1.2-1-*/bin/python"))

PROBE = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, threading
    report = {
        "argv": sys.argv, "cwd": os.getcwd(), "path": sys.path, "name": __name__,
        "file": globals().get("__file__"), "spec": getattr(__spec__, "origin", None),
        "loader": type(globals().get("__loader__")).__name__,
        "orig_argv": getattr(sys, "orig_argv", [None])[1:],
        "env": {k: v for k, v in os.environ.items() if k.startswith(("PROBE_", "PYTHON", "OMP_"))},
        "env_count": len(os.environ), "c_env": subprocess.run(
            "echo $PROBE_VALUE", shell=True, capture_output=True, text=True
        ).stdout.strip(),
        "own_session": os.getsid(0) == os.getpid(), "own_group": os.getpgid(0) == os.getpid(),
        "fds": sorted(os.listdir("/proc/self/fd")),
        "signals": {n: str(signal.getsignal(getattr(signal, n))) for n in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGPIPE")},
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "threads": threading.active_count(),
        "stdout": [sys.stdout.encoding, sys.stdout.line_buffering, sys.stdout.write_through],
        "stderr": [sys.stderr.encoding, sys.stderr.errors, sys.stderr.line_buffering],
        "flags": repr(sys.flags),
    }
    print(json.dumps(report, sort_keys=True))
    """
)


@pytest.fixture(scope="module")
def pool() -> Iterator[ForkServers]:
    with ForkServers({}) as servers:
        yield servers


@pytest.fixture
def code(tmp_path: Path) -> Path:
    folder = tmp_path / "code"
    (folder / "probepkg").mkdir(parents=True)
    (folder / "probe.py").write_text(PROBE)
    (folder / "probepkg" / "__init__.py").write_text("")
    (folder / "probepkg" / "probe.py").write_text(PROBE)
    return folder


def job_environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "PROBE_VALUE": "seen", "PYTHONUNBUFFERED": "1", **extra}


def run_both(pool: ForkServers, command: list[str], env: dict[str, str], cwd: Path, log_dir: Path) -> list[str]:
    """The output of ``command`` started fresh and forked by a server, each to its own log file."""
    outputs = []
    for how in ("fresh", "forked"):
        log_path = log_dir / f"{how}.log"
        with log_path.open("w") as log:
            if how == "fresh":
                process = start_fresh(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
            else:
                started = pool.start(command, env=env, preload=PRELOAD, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
                assert started.forked, started.reason
                process = started.process
        assert process.wait() == 0, log_path.read_text()
        outputs.append(log_path.read_text())
    return outputs


@pytest.mark.parametrize("form", ["script", "module"])
def test_a_forked_job_sees_what_a_fresh_interpreter_sees(pool: ForkServers, code: Path, tmp_path: Path, form: str):
    command = [sys.executable, str(code / "probe.py"), "--flag", "x y"]
    if form == "module":
        command = [sys.executable, "-m", "probepkg.probe", "--flag", "x y"]
    cwd = code if form == "module" else tmp_path  # -m finds its package in the working directory
    fresh, forked = run_both(pool, command, job_environment(PYTHONPATH=str(tmp_path)), cwd, tmp_path)
    assert json.loads(forked) == json.loads(fresh)
    assert json.loads(forked)["c_env"] == "seen"  # the C library's environment is the job's too


@pytest.mark.skipif(not IMAGE_PYTHONS, reason="the sklearn 1.2-1 environment is not built on this machine")
def test_the_image_interpreter_forks_like_a_fresh_one(code: Path, tmp_path: Path):
    python = str(IMAGE_PYTHONS[-1])
    env = {"PATH": os.environ["PATH"], "PROBE_VALUE": "seen", "PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1"}
    with ForkServers({}) as servers:
        fresh, forked = run_both(servers, [python, str(code / "probe.py"), "a"], env, tmp_path, tmp_path)  # noqa: E501
    assert json.loads(forked) == json.loads(fresh)


SCRIPTS = {
    "ok": "print('out'); import sys; print('err', file=sys.stderr)",
    "exit": "import sys; sys.exit(3)",
    "exit_text": "import sys; sys.exit('bad thing')",
    "raise": "def f():\n    raise ValueError('boom')\nf()",
    "signal": "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
    "interrupt": "raise KeyboardInterrupt",
    "threads": (
        "import atexit, threading, time\n"
        "atexit.register(lambda: print('atexit ran', flush=True))\n"
        "def later():\n    time.sleep(0.2)\n    print('thread ended')\n"
        "threading.Thread(target=later).start()\n"
        "print('main ended')"
    ),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_exit_codes_and_output_are_a_fresh_processs(pool: ForkServers, tmp_path: Path, name: str):
    script = tmp_path / f"job_{name}.py"  # not signal.py: a script's folder comes first on sys.path
    script.write_text(SCRIPTS[name] + "\n")
    fresh, forked = [], []
    for how, into in (("fresh", fresh), ("forked", forked)):
        log_path = tmp_path / f"{how}.log"
        with log_path.open("w") as log:
            command = [sys.executable, str(script)]
            if how == "fresh":
                process = start_fresh(command, env=job_environment(), stdout=log, stderr=subprocess.STDOUT)
            else:
                started = pool.start(command, env=job_environment(), preload=PRELOAD, stdout=log, stderr=log)
                process = started.process
        into.extend([process.wait(), log_path.read_text()])
    assert forked == fresh


def test_a_job_killed_by_its_group_takes_what_it_started(pool: ForkServers, tmp_path: Path):
    pids = tmp_path / "pids"
    script = tmp_path / "spawner.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)\n"
    )
    started = pool.start([sys.executable, str(script), "--flag"], env=job_environment(), preload=PRELOAD)
    grandchild = int(wait_for_text(pids))
    shown = Path(f"/proc/{started.process.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    assert shown == f"{sys.executable} {script} --flag"  # ps shows the job, not its server
    kill_group(started.process)
    assert started.process.wait() == -signal.SIGKILL
    wait_until_gone(grandchild)


def test_a_job_dies_with_its_server(tmp_path: Path):
    with ForkServers({}) as servers:
        started = servers.start(
            [sys.executable, "-c", "import time; time.sleep(600)"], env=job_environment(), preload=PRELOAD
        )
        assert not started.forked  # -c is not a script: fresh, and why
        assert "-c" in started.reason
        started.process.kill()
        started.process.wait()
        script = tmp_path / "sleeper.py"
        script.write_text("import time; time.sleep(600)\n")
        started = servers.start([sys.executable, str(script)], env=job_environment(), preload=PRELOAD)
        assert started.forked, started.reason
        (server,) = servers.server_pids()
        os.kill(server, signal.SIGKILL)
        assert started.process.wait() == -signal.SIGKILL
        wait_until_gone(started.process.pid)


def test_killing_llpipe_ends_the_server_and_its_jobs(tmp_path: Path):
    """The process holding the pool (llpipe) killed with SIGKILL, which it cannot handle: the kernel ends its
    servers, and their jobs with them."""
    pids = tmp_path / "pids.json"
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time; time.sleep(600)\n")
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import json, sys, time\n"
        "from pipeline.core.forkserver import ForkServers\n"
        "servers = ForkServers({})\n"
        f"started = servers.start([sys.executable, {str(sleeper)!r}], env={{'PATH': '/usr/bin'}}, preload=['json'])\n"
        "assert started.forked, started.reason\n"
        f"open({str(pids)!r} + '.tmp', 'w').write(json.dumps([started.process.pid, *servers.server_pids()]))\n"
        f"import os; os.rename({str(pids)!r} + '.tmp', {str(pids)!r})\n"
        "time.sleep(600)\n"
    )
    llpipe = subprocess.Popen(
        [sys.executable, str(driver)], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    )
    try:
        job, server = json.loads(wait_for_text(pids))
        assert Path(f"/proc/{job}").exists() and Path(f"/proc/{server}").exists()
    finally:
        llpipe.kill()
        llpipe.wait()
    wait_until_gone(server)
    wait_until_gone(job)


def test_a_server_that_cannot_preload_leaves_its_jobs_fresh_and_says_why(tmp_path: Path):
    script = tmp_path / "job.py"
    script.write_text("print('ran')\n")
    with ForkServers({}) as servers:
        started = servers.start([sys.executable, str(script)], env=job_environment(), preload=["no_such_module_x"])
        assert not started.forked
        assert "no_such_module_x" in started.reason and started.how.startswith("fresh process: ")
        assert started.process.wait() == 0
    with ForkServers({SETTING: "0"}) as servers:
        started = servers.start([sys.executable, str(script)], env=job_environment(), preload=PRELOAD)
        assert not started.forked and SETTING in started.reason
        assert started.process.wait() == 0


def test_jobs_with_other_start_up_variables_get_a_server_of_their_own(tmp_path: Path):
    script = tmp_path / "job.py"
    script.write_text("import os; print(os.environ['OMP_NUM_THREADS'])\n")
    with ForkServers({}) as servers:
        for threads in ("1", "2", "1"):
            started = servers.start(
                [sys.executable, str(script)], env=job_environment(OMP_NUM_THREADS=threads), preload=PRELOAD
            )
            assert started.forked and started.process.wait() == 0
        assert len(servers.server_pids()) == 2


def wait_for_text(path: Path) -> str:
    """The file's text once it exists (the job writes it under a temporary name or in one write)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def wait_until_gone(pid: int) -> None:
    """Wait until ``pid`` has ended and been reaped (its /proc entry gone, or a zombie nobody has reaped yet)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")


JOB = """
import json, os, pathlib, sys
host = json.loads(pathlib.Path(sys.argv[sys.argv.index("--resource-config") + 1]).read_text())["current_host"]
print("hello from", host, os.environ.get("GREETING"), "pandas" in sys.modules, flush=True)
"""


@pytest.mark.parametrize(
    ("entry", "setting", "started"),
    [
        ("preprocess.py", "1", "fork server"),
        ("preprocess.py", "0", f"fresh process: {SETTING} is off"),
        ("job.py", "1", "fresh process: no preload list for this job"),
    ],
)
def test_a_processing_job_records_how_its_instances_started(tmp_path: Path, entry: str, setting: str, started: str):
    from support.processing_jobs import processing_definition, run

    from pipeline.local.jobs import local_runners
    from pipeline.local.s3 import LocalS3
    from pipeline.local.workdir import Workdir

    s3 = LocalS3(tmp_path / "s3")
    s3.put_bytes(f"s3://bkt/code/{entry}", JOB.encode())
    s3.put_bytes("s3://bkt/data/a.csv", b"x\n")
    definition = processing_definition(instances=2)
    app = definition["Steps"][0]["Arguments"]["AppSpecification"]
    app["ContainerEntrypoint"][1] = f"/opt/ml/processing/input/code/{entry}"
    with ForkServers({SETTING: setting}) as servers:
        runners = local_runners(Workdir(tmp_path), region="us-east-1", account="1", fork_servers=servers)
        record, _ = run(tmp_path, definition, runners)
    assert record.status == "Succeeded", record.failure_reason
    step = record.folder / "steps" / "Job"
    assert json.loads((step / "environment.json").read_text())["instances_started"] == [started, started]
    preloaded = started == "fork server"  # the server's pandas is in the job's sys.modules, as Preprocess imports it
    assert (step / "logs" / "algo-2.log").read_text() == f"hello from algo-2 hi {preloaded}\n"


def test_each_forked_job_draws_its_own_random_state(pool: ForkServers, tmp_path: Path):
    """numpy's legacy global state and Python's ``random`` as a fresh interpreter has them: from the OS, per process
    (a forked child would otherwise repeat its server's draws)."""
    script = tmp_path / "draw.py"
    script.write_text("import random, numpy\nprint(random.random(), numpy.random.rand())\n")
    draws = []
    for _ in range(2):
        started = pool.start(
            [sys.executable, str(script)], env=job_environment(), preload=PRELOAD, stdout=subprocess.PIPE, text=True
        )
        assert started.forked, started.reason
        with started.process.stdout as output:  # a pipe, closed by its reader as Popen's
            draws.append(output.read())
        assert started.process.wait() == 0
    first, second = (line.split() for line in draws)
    assert first[0] != second[0] and first[1] != second[1]

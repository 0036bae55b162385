"""The local stages' servers are started detached by this process (pipeline/local/endpoints.py): one stopped by its
pid is reaped through its Popen, so none is left that Python warns about at exit ("subprocess N is still running",
seen at the end of every full test run from the workers that deployed in-process)."""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time
import warnings
from pathlib import Path

from pipeline.local import endpoints


def test_a_stopped_server_is_reaped_through_its_popen_and_forgotten(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    script = f"import pathlib, time; pathlib.Path({str(ready)!r}).write_text({json.dumps(json.dumps({'port': 1}))}); "
    script += "time.sleep(600)"
    server = endpoints.launch_server([sys.executable, "-c", script], ready, tmp_path / "server.log", timeout=120)
    assert [process.pid for process in endpoints._DETACHED].count(server.pid) == 1
    assert endpoints.stop_server(server.pid, server.process_start)
    assert server.pid not in [process.pid for process in endpoints._DETACHED]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()  # what the interpreter does with the Popen objects at exit
    assert [str(warning.message) for warning in caught if "still running" in str(warning.message)] == []


def test_a_server_another_process_stopped_is_reaped_at_the_next_launch_or_at_exit(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    script = f"import pathlib, time; pathlib.Path({str(ready)!r}).write_text({json.dumps(json.dumps({'port': 1}))}); "
    script += "time.sleep(600)"
    server = endpoints.launch_server([sys.executable, "-c", script], ready, tmp_path / "server.log", timeout=120)
    os.kill(server.pid, signal.SIGTERM)  # as a second `llpipe deploy` stops it: by pid, from outside
    while endpoints._alive(server.pid, server.process_start):  # until it has ended (a zombie of this process)
        time.sleep(0.02)
    endpoints._forget_ended()  # what the next launch and the exit handler do
    assert server.pid not in [process.pid for process in endpoints._DETACHED]

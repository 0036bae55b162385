"""The local stages' servers are started detached by this process (pipeline/local/endpoints.py): one stopped by its
pid is reaped through its Popen, so none is left that Python warns about at exit ("subprocess N is still running",
seen at the end of every full test run from the workers that deployed in-process)."""

from __future__ import annotations

import gc
import json
import sys
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

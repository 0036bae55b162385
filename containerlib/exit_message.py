"""SageMaker's exit-message file: why a processing job failed, shown as DescribeProcessingJob's ``ExitMessage``."""

from __future__ import annotations

import sys
from pathlib import Path

from containerlib.hosts import current_host_name

EXIT_MESSAGE_FILE = "/opt/ml/output/message"  # what a container writes; DescribeProcessingJob's ExitMessage shows it
EXIT_MESSAGE_BYTES = 1024  # ExitMessage: the first 1 KB of every instance's message, concatenated


def write_exit_message(path: Path, message: str, resource_config: Path) -> None:
    """``<host>: <message>`` into SageMaker's exit-message file, so the job's ExitMessage says why it failed (not
    only its CloudWatch log); nothing when the file's folder does not exist (the script is not in a job).

    Valid UTF-8 (other bytes would fail the job), at most ``EXIT_MESSAGE_BYTES``, cut on a character boundary; the
    host names the instance, since SageMaker concatenates every instance's message."""
    import socket

    if not path.parent.is_dir():
        return
    host = current_host_name(resource_config) or socket.gethostname()
    data = f"{host}: {message}\n".encode("utf-8", "backslashreplace")[:EXIT_MESSAGE_BYTES]
    try:
        path.write_bytes(data.decode("utf-8", "ignore").encode("utf-8"))  # "ignore" drops a character cut in two
    except OSError as error:
        print(f"exit message not written to {path}: {error}", file=sys.stderr)

"""SageMaker's exit-message file: why a processing job failed, shown as DescribeProcessingJob's ``ExitMessage``."""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path

from containerlib.hosts import RESOURCE_CONFIG, current_host_name

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


def add_arguments(parser: argparse.ArgumentParser, resource_config_help: str) -> None:
    """A job's ``--resource-config`` and ``--exit-message-file``, with SageMaker's paths as defaults."""
    parser.add_argument(
        "--resource-config",
        type=Path,
        default=Path(RESOURCE_CONFIG),
        help=f"SageMaker's host list: {resource_config_help} (default: %(default)s)",
    )
    parser.add_argument(
        "--exit-message-file",
        type=Path,
        default=Path(EXIT_MESSAGE_FILE),
        help="on failure the reason is also written here, if its folder exists: SageMaker shows the file as the "
        "job's ExitMessage (default: %(default)s)",
    )


def report_input_error(script: str, error: Exception, args: argparse.Namespace) -> int:
    """Bad input: ``<script>: error: <message>`` as one line on stderr and in the exit-message file; exit status 1."""
    message = f"{script}: error: {' '.join(str(error).split())}"
    print(message, file=sys.stderr)
    write_exit_message(args.exit_message_file, message, args.resource_config)
    return 1


VOLUME_ADVICE = (
    "give the job a larger storage volume (the step's VolumeSizeInGB parameter) or less data per instance (more "
    "instances)"
)


def report_defect(script: str, error: Exception, args: argparse.Namespace) -> None:
    """A defect, not bad input: the traceback goes to the log (the caller re-raises), its last line to the exit
    message. The file system refusing a write (full volume, read-only, permission) is no defect of the script: said
    as what it is, with the path and what to do (:mod:`containerlib.file_errors`)."""
    from containerlib.file_errors import describe, is_write_refusal

    if is_write_refusal(error):
        advice = VOLUME_ADVICE if getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT) else ""
        folder = getattr(args, "output_dir", None)  # the job's output: where it writes, if the error names no file
        message = f"{script}: {describe(error, advice, folder=str(folder) if folder else None)}"  # type: ignore[arg-type]
        print(message, file=sys.stderr)
    else:
        message = f"{script}: unexpected {type(error).__name__}: {' '.join(str(error).split())} (traceback in the log)"
    write_exit_message(args.exit_message_file, message, args.resource_config)

"""Run by every command that opens a work dir: what an ``llpipe`` process killed without warning (SIGKILL, the OOM
killer, a power cut) left there is finished off, so no record stays "Executing" and no half-written object stays.

An execution recorded as executing whose process is gone is marked Stopped with the reason, its steps' sandboxes
and training instances' folders (copies of the data) removed, as are those an ended execution still holds (a failed
Train kept its instances' data before); ``.tmp`` files of killed writers in the local S3 folder are removed, and
the copies of a killed ``llpipe monitor`` (its staging folder and its job's sandbox).
"""

from __future__ import annotations

import contextlib
import json
import shutil

from pipeline.core.names import StepStatus
from pipeline.core.stale import sweep_partial_files, sweep_temp_folders
from pipeline.local.executions import ExecutionRecord, ExecutionStore, now, owner_alive
from pipeline.local.workdir import Workdir

SCRATCH_FOLDERS = ("sandbox", "instances")  # a step's job scratch space: processing sandbox, training instances
# llpipe monitor's copies: <pipeline prefix>/monitoring/.staging/monitor-<pid>-<id>/ in the local S3 folder (one
# version's share of a window's capture), and its job's sandbox beside the owner.json naming the monitor's process
MONITOR_STAGING = ".staging"
MONITOR_KIND = "monitor"
MONITOR_OWNER = "owner.json"


def abandoned_reason(record: ExecutionRecord) -> str:
    """Why an execution recorded as running is not: the process that ran it ended without finishing the record."""
    owner = record.owner
    return (
        f"abandoned: llpipe process {owner.get('pid')} on {owner.get('host')} ended without finishing the record "
        "(killed with SIGKILL, out of memory, or the machine stopped)"
    )


def reap(workdir: Workdir) -> list[ExecutionRecord]:
    """Finish off what killed processes left in ``workdir``; the executions marked Stopped."""
    reaped = []
    for record in ExecutionStore(workdir.executions).list():
        if not record.abandoned:
            if record.status != StepStatus.EXECUTING:  # what an ended step kept (older versions kept a failed one's)
                _remove_scratch(record)
            continue
        reason = abandoned_reason(record)
        for step in record.steps.values():
            if step.status == StepStatus.EXECUTING:
                step.status, step.end_time, step.failure_reason = StepStatus.STOPPED, now(), reason
            elif step.status == StepStatus.PENDING:
                step.status, step.detail = StepStatus.SKIPPED, "not reached: the execution was abandoned"
        _remove_scratch(record)
        record.status, record.failure_reason, record.end_time = StepStatus.STOPPED, reason, now()
        record.save()
        reaped.append(record)
    if workdir.s3.is_dir():
        sweep_partial_files(workdir.s3)
    _reap_monitoring(workdir)
    return reaped


def _reap_monitoring(workdir: Workdir) -> None:
    """Remove the staging copies and job sandboxes of ``llpipe monitor`` processes that are gone (SIGKILL)."""
    for staging in workdir.s3.glob(f"*/*/monitoring/{MONITOR_STAGING}"):  # s3/<bucket>/<pipeline name>/...
        sweep_temp_folders(MONITOR_KIND, staging)
        with contextlib.suppress(OSError):
            staging.rmdir()  # once no other monitor uses it
    for sandbox in workdir.monitoring.glob("*/sandbox"):
        try:
            owner = json.loads((sandbox.parent / MONITOR_OWNER).read_text())
        except (OSError, ValueError):
            continue  # not one this version started, or its owner is still writing it
        if isinstance(owner, dict) and owner_alive(owner) is False:
            shutil.rmtree(sandbox, ignore_errors=True)


def _remove_scratch(record: ExecutionRecord) -> None:
    """Remove the scratch folders (data copies) of every step of an execution that no longer runs; logs stay."""
    for step in record.steps.values():
        for scratch in SCRATCH_FOLDERS:
            folder = record.folder / "steps" / step.name / scratch
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)


def reap_quietly(workdir: Workdir) -> None:
    """``reap``, for commands that only read: a work dir that cannot be written is left as it is."""
    try:
        reap(workdir)
    except OSError:
        pass

"""The ``llpipe`` command: one sub-command per module, each module owning its own arguments.

Every command module exposes ``configure(parser)`` to declare its arguments and ``run(args) -> int`` to do the work;
it parses and renders, the work itself is in library modules. Errors are raised as ``pipeline.core.errors.LlpipeError``
and turned into one line ``llpipe <command>: <message>`` and an exit code here, in ``main`` (usage errors 2,
failures 1), the options they mention worded as this command line's flags (:func:`flag`). Command modules keep
heavy imports (the SageMaker SDK, numpy) inside functions so ``llpipe --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Callable
from types import TracebackType

from pipeline.core.errors import ARGUMENTS, PARAMETERS, Interrupted, LlpipeError, LlpipeWarning
from pipeline.core.safe_text import printable, redact
from pipeline.core.signals import STOP_SIGNALS, stop_signals_raise

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("pipeline.cli.run", "run the pipeline locally (default: the bundled example data set)"),
    "executions": ("pipeline.cli.executions", "list recent executions (local, or --sagemaker)"),
    "execution": ("pipeline.cli.execution", "show one execution (local or --sagemaker): steps, logs, cost"),
    "compare": ("pipeline.cli.compare", "two executions side by side: parameters, metrics, gate, model package"),
    "ui": ("pipeline.cli.ui", "open MLflow's UI on the local executions' runs (mlflow server on 127.0.0.1)"),
    "env": ("pipeline.cli.env", "build or show the processing images' local Python environments"),
    "scaling": ("pipeline.cli.scaling", "train one Preprocess output at several instance counts: speedup, cost"),
    "plan": ("pipeline.cli.plan", "per step, what an input needs and costs on SageMaker: fleet, disk, memory, time"),
    "linear-learner": ("pipeline.cli.linear_learner", "train or transform with the local Linear Learner"),
    "definition": ("pipeline.cli.definition", "print or write the pipeline definition JSON"),
    "upsert": ("pipeline.cli.upsert", "upload code bundles, create or update the pipeline"),
    "start": ("pipeline.cli.start", "start an execution on SageMaker, optionally wait"),
    "schedule": ("pipeline.cli.schedule", "schedule executions with EventBridge Scheduler"),
    "retry": ("pipeline.cli.retry", "retry a failed execution on SageMaker"),
    "stop": ("pipeline.cli.stop", "stop a running execution on SageMaker"),
    "alerts": ("pipeline.cli.alerts", "notify an SNS topic of failed executions (EventBridge rule)"),
    "models": ("pipeline.cli.models", "list, describe, approve or reject registered model versions"),
    "monitor": ("pipeline.cli.monitor", "check an endpoint's captured traffic for drift; --schedule on SageMaker"),
    "serve": ("pipeline.cli.serve", "serve a registered version over HTTP on this machine, as its endpoint answers"),
    "deploy": ("pipeline.cli.deploy", "deploy an approved version to the staging or prod endpoint, smoke-tested"),
    "endpoints": ("pipeline.cli.endpoints", "what each stage's endpoint serves (version, since, smoke test)"),
    "undeploy": ("pipeline.cli.undeploy", "remove a stage's endpoint and what deploy created for it"),
}


def flag(name: str, value: str | None) -> str:
    """An option as ``llpipe`` takes it: a pipeline parameter ``--param Epochs=0``, a setting ``--data PATH``,
    ``--no-infer`` for ``infer=False`` (the words of :meth:`~pipeline.core.errors.LlpipeError.worded`)."""
    if name == PARAMETERS:
        return "--param"
    if name == ARGUMENTS:
        return "command line"
    if name[:1].isupper():
        return f"--param {name}" + ("" if value is None else f"={value}")
    option = "--" + name.replace("_", "-")
    if value == "False":
        return f"--no-{option[2:]}"
    return option if value in (None, "True") else f"{option} {value}"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full argument parser; every command module adds its own arguments. With ``only`` (a command's name) that
    command alone is configured: the others are listed by name and help without importing their modules (a third
    of a CPU-second of every ``llpipe`` start)."""
    parser = argparse.ArgumentParser(
        prog="llpipe",
        description="Distributed Linear Learner training as a SageMaker Pipelines DAG, runnable locally.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        command_parser = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip())
        module.configure(command_parser)
        command_parser.set_defaults(handler=module.run, command_name=name, command_parser=command_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``llpipe`` console script; returns the process exit code."""
    given = sys.argv[1:] if argv is None else argv
    args, extra = build_parser(given[0] if given and given[0] in COMMANDS else None).parse_known_args(argv)
    if extra:  # said by the command's own parser: its usage, not the top-level one (`llpipe serve 99`)
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        with stop_signals_raise():
            return int(args.handler(args) or 0)
    except LlpipeError as error:
        print(f"llpipe {args.command_name}: {printable(error.worded(flag), newlines=True)}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt as interrupt:  # Ctrl-C (SIGINT), SIGTERM or SIGHUP: the work was stopped and recorded
        number = interrupt.signal_number if isinstance(interrupt, Interrupted) else signal.SIGINT
        print(f"llpipe {args.command_name}: stopped by {signal.Signals(number).name}", file=sys.stderr)
        return 128 + number
    except BrokenPipeError:  # `llpipe ... | head`: the reader left; exit quietly as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:  # the file system refused: a read-only or missing work dir, a full disk
        from containerlib.file_errors import describe, is_write_refusal

        if is_write_refusal(error):
            said = describe(error, "free space there or make it writable, or pick another work dir (--workdir DIR)")
            print(f"llpipe {args.command_name}: {redact(printable(said))}", file=sys.stderr)
            return 1
        where = f"{error.filename}: " if error.filename else ""
        said = redact(printable(f"{where}{error.strerror or error}"))
        print(
            f"llpipe {args.command_name}: {said}; check that the path exists, is writable "
            "and has free space (--workdir DIR picks another work dir)",
            file=sys.stderr,
        )
        return 1


def console() -> None:
    """The process's entry point (the ``llpipe`` script, ``python -m pipeline``): :func:`main`, then exit with its
    code. A stop signal landing once the command's work is done, while the interpreter winds down (about 0.1 s), is
    ignored: it has nothing left to stop, and the process ends with the command's code instead of being killed by
    the signal (``tests/manual/interrupt_loop.py`` found a run killed there, exit -1).

    Before any command starts: text the terminal's encoding cannot hold (a label value in an ASCII locale) is
    printed with backslash escapes instead of failing the command; a traceback, should one escape, is printed with
    its secrets redacted; an llpipe warning is one line, ``llpipe: warning: ...`` (not Python's file and line);
    Ctrl-C while the commands' modules are still importing ends like Ctrl-C later, one line and exit 130."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    sys.excepthook = _redacted_traceback
    warnings.showwarning = _one_line_warning(warnings.showwarning)
    try:
        code = main()
    except KeyboardInterrupt:  # during start-up: main's own handler is not in place yet
        print("llpipe: stopped by SIGINT", file=sys.stderr)
        code = 128 + signal.SIGINT
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    sys.exit(code)


def _one_line_warning(shown: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` printing an :class:`LlpipeWarning` as ``llpipe: warning: <message>``, the others as
    ``shown`` does."""

    def show(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
        if issubclass(category, LlpipeWarning):
            print(f"llpipe: warning: {redact(printable(str(message)))}", file=sys.stderr)
        else:
            shown(message, category, *args, **kwargs)

    return show


def _redacted_traceback(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    """``sys.excepthook``: a traceback as Python prints it, with secrets (:func:`redact`) masked."""
    import traceback

    sys.stderr.write(redact("".join(traceback.format_exception(kind, error, trace))))

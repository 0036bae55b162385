"""All of a host's output or none: files built in a private work folder, renamed into place when complete."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from containerlib.hosts import Host
from containerlib.names import SPLITS
from preprocessing import PreprocessError
from preprocessing.baseline import BASELINE
from preprocessing.model_data import MODEL, MODEL_DATA
from preprocessing.raw_rows import ROWS


class OutputTransaction:
    """Builds files in a private work folder and renames them into place; on failure removes all of them."""

    def __init__(self, output_dir: Path, host: Host):
        self.output_dir = output_dir
        self.host = host
        self.work_dir = output_dir / f".preprocess-work-{host.name}"
        self.committed: list[Path] = []
        self.created: list[Path] = []  # folders this host made, removed on failure when still empty

    def begin(self) -> None:
        if not self.output_dir.exists():
            self.created.append(self.output_dir)
        for sub in (*SPLITS, "summary", BASELINE, MODEL, ROWS):
            folder = self.output_dir / sub
            if not folder.exists():
                self.created.append(folder)
            folder.mkdir(parents=True, exist_ok=True)
            clash = sorted(p.name for p in folder.glob(f"*-{self.host.name}[-.]*"))
            if sub == "summary" and self.host.count == 1 and (folder / "summary.json").exists():
                clash.append("summary.json")
            if sub == MODEL and self.host.index == 0 and (folder / MODEL_DATA).exists():
                clash.append(MODEL_DATA)
            if clash:
                raise PreprocessError(
                    f"{folder} already holds output of host {self.host.name}: {clash[:3]}; use an empty output dir"
                )
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir(parents=True)

    def commit(self, built: Path, sub: str) -> str:
        """Move one complete file into ``<output>/<sub>/``; returns its path relative to the output dir."""
        target = self.output_dir / sub / built.name
        os.replace(built, target)
        self.committed.append(target)
        return f"{sub}/{built.name}"

    def cleanup(self, failed: bool) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)
        if failed:
            for path in self.committed:
                path.unlink(missing_ok=True)
            for folder in reversed(self.created):  # sub-folders before the output folder
                try:
                    folder.rmdir()
                except OSError:  # not empty: another host's output is in it
                    pass

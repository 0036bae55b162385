"""The documentation cannot drift: generated pages match the code, the site builds strictly, the guides' marked
commands run, and every built page loads in a real headless browser.

A guide marks a command block to run with ``<!-- docs-test -->`` (or ``<!-- docs-test exit=N -->``) on the line
before a fenced ``console`` block; each ``$ `` line (with ``\\`` continuations) runs in bash, in one fresh folder per
page, in order, and must exit 0 (or N). Pages that start with the same commands (several guides start with
``llpipe run``) share them: those commands run once per session in a fresh folder, and each such page continues in a
copy of the folder they left.
"""

from __future__ import annotations

import functools
import hashlib
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.browser import headless, require_chromium
from support.finished_run import locked

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent
MARKER = re.compile(r"^<!-- docs-test(?: exit=(\d+))? -->\n```console\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True)
class Command:
    """One ``$ `` line of a marked block, and the exit code the page promises for it."""

    line: str
    exit_code: int


def marked_commands(page: Path) -> list[Command]:
    """The commands of a page's marked console blocks, in page order."""
    commands = []
    for match in MARKER.finditer(page.read_text(encoding="utf-8")):
        exit_code = int(match.group(1) or 0)
        current: list[str] = []
        for raw in match.group(2).splitlines():
            if raw.startswith("$ "):
                current = [raw[2:]]
            elif current:
                current.append(raw)
            else:
                continue
            if not raw.endswith("\\"):
                commands.append(Command("\n".join(current), exit_code))
                current = []
    return commands


GUIDE_PAGES = sorted(page for page in DOCS.rglob("*.md") if marked_commands(page))


def _environment(workdir: Path) -> dict[str, str]:
    """This interpreter's bin first on PATH (llpipe, python), this checkout importable, no AWS reachable."""
    environment = dict(os.environ)
    environment["PATH"] = f"{BIN}{os.pathsep}{environment.get('PATH', '')}"
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    environment["HOME"] = environment.get("HOME", str(workdir))
    environment["COLUMNS"] = "120"
    return environment


def test_the_marker_finds_commands_exit_codes_and_continuations(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n<!-- docs-test -->\n```console\n$ echo a \\\n  b\nnot a command\n$ true\n```\n"
        "```console\n$ never run\n```\n<!-- docs-test exit=2 -->\n```console\n$ false\n```\n"
    )
    assert marked_commands(page) == [Command("echo a \\\n  b", 0), Command("true", 0), Command("false", 2)]


def test_every_guide_page_with_commands_is_found() -> None:
    names = {page.relative_to(DOCS).as_posix() for page in GUIDE_PAGES}
    assert {"guides/own-data.md", "guides/deploying.md", "guides/troubleshooting.md"} <= names


def shared_prefixes(pages: list[list[Command]]) -> set[tuple[Command, ...]]:
    """Every leading sequence of commands (exit codes included) that two or more of the pages start with."""
    starts = [{tuple(commands[:length]) for length in range(1, len(commands) + 1)} for commands in pages]
    return {prefix for prefix in set().union(*starts) if sum(prefix in start for start in starts) > 1}


def longest_shared(commands: tuple[Command, ...], shared: set[tuple[Command, ...]]) -> tuple[Command, ...]:
    """The longest of ``shared`` that ``commands`` start with (empty when none)."""
    return next((commands[:length] for length in range(len(commands), 0, -1) if commands[:length] in shared), ())


SHARED = shared_prefixes([marked_commands(page) for page in GUIDE_PAGES])


def test_pages_share_the_commands_two_or_more_of_them_start_with() -> None:
    run, approve, scaling = Command("llpipe run", 0), Command("llpipe models approve 1", 0), Command("scaling", 0)
    failing = Command("llpipe run", 2)  # the same line promising another exit code is another command
    pages = [[run, approve, run], [run, approve, scaling], [run, scaling], [failing], [scaling, run]]
    assert shared_prefixes(pages) == {(run,), (run, approve)}
    assert longest_shared((run, approve, run), shared_prefixes(pages)) == (run, approve)
    assert longest_shared((failing,), shared_prefixes(pages)) == ()


def _run_commands(commands: tuple[Command, ...] | list[Command], folder: Path, page: Path) -> None:
    """``commands`` in order in ``folder`` (each in bash), each exiting as the page promises."""
    environment = _environment(folder)
    for command in commands:
        result = subprocess.run(
            ["bash", "-c", command.line],
            cwd=folder,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == command.exit_code, (
            f"{page.relative_to(ROOT)}: `{command.line}` exited {result.returncode}, "
            f"the page promises {command.exit_code}\nstdout:\n{result.stdout[-3000:]}\n"
            f"stderr:\n{result.stderr[-3000:]}"
        )


def _stop_stages(folder: Path) -> list[str]:
    """Stop the stage servers the commands left deployed in ``folder`` (a failed deploy guide must not leave them
    running); the stages that were deployed."""
    stages = [stage for stage in ("prod", "staging") if (folder / ".llpipe" / "endpoints" / f"{stage}.json").exists()]
    for stage in stages:
        subprocess.run(
            ["llpipe", "undeploy", "--stage", stage],
            cwd=folder,
            env=_environment(folder),
            capture_output=True,
            timeout=120,
        )
    return stages


@pytest.fixture(scope="session")
def guide_states(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the folders the shared commands leave are kept: under xdist the workers share it (as
    ``finished_run``'s), so the first to take a state's lock runs its commands and the other waits and copies."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent / "docs-guide-states"
        root.mkdir(exist_ok=True)
        return root
    return tmp_path_factory.mktemp("docs-guide-states")


def _state_after(prefix: tuple[Command, ...], page: Path, states: Path) -> Path:
    """The folder a fresh folder is after ``prefix``'s commands, built once per session (from the state of the longest
    shared prefix before it): read it, never run commands in it."""
    folder = states / hashlib.sha256(repr(prefix).encode()).hexdigest()[:16]
    done = folder.with_suffix(".done")
    with locked(folder.with_suffix(".lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
            start = longest_shared(prefix[:-1], SHARED)
            if start:
                shutil.copytree(_state_after(start, page, states), folder, symlinks=True)
            else:
                folder.mkdir()
            try:
                _run_commands(prefix[len(start) :], folder, page)
            finally:
                serving = _stop_stages(folder)
            assert not serving, (
                f"{[command.line for command in prefix]} leave {serving} deployed: copies of the folder cannot share "
                "a server, so pages cannot share these commands"
            )
            done.touch()
    return folder


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=lambda page: page.relative_to(DOCS).as_posix())
def test_guide_commands_run(page: Path, tmp_path: Path, guide_states: Path) -> None:
    commands = tuple(marked_commands(page))
    start = longest_shared(commands, SHARED)
    if start:
        shutil.copytree(_state_after(start, page, guide_states), tmp_path, symlinks=True, dirs_exist_ok=True)
    try:
        _run_commands(commands[len(start) :], tmp_path, page)
    finally:
        _stop_stages(tmp_path)


README_LINK = re.compile(r"\]\(([^)#:]+)(?:#[^)]*)?\)")


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200
    first_block = lines.index("```") + 1
    commands = [line.split("#")[0].strip() for line in lines[first_block : lines.index("```", first_block)]]
    assert commands == ["make run", "make test"]
    first_screen = "\n".join(lines[:40])
    for page in ("docs/guides/own-data.md", "docs/guides/sagemaker.md", "docs/guides/serving.md"):
        assert f"]({page})" in first_screen, f"the README's first screen does not link {page}"


def test_the_readme_links_only_to_files_that_exist() -> None:
    targets = README_LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(targets) > 10
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_generated_references_match_the_code() -> None:
    result = subprocess.run(
        [sys.executable, str(DOCS / "gen_references.py"), "--check"],
        cwd=ROOT,
        env=_environment(ROOT),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built with ``mkdocs build --strict`` (a broken link, anchor or reference fails it). Skipped where the
    [docs] extra is not installed: CodeBuild's buildspec installs [dev] only, to deploy the pipeline; `make test`
    (CI's .ci/run) installs both."""
    pytest.importorskip("mkdocs", reason="the [docs] extra (mkdocs) is not installed: pip install -e '.[docs]'")
    site_dir = tmp_path_factory.mktemp("site")
    environment = dict(_environment(site_dir), NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return site_dir


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = {page.relative_to(DOCS).with_suffix("").as_posix() for page in DOCS.rglob("*.md")}
    built = {page.parent.relative_to(site).as_posix() for page in site.rglob("index.html")}
    assert {"." if page == "index" else page for page in pages} == built


@pytest.fixture(scope="module")
def served_site(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1, as a browser loads a published site."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def end_headers(self) -> None:
        """Nothing kept in the browser's cache: the every-page check's frames each fetch the same search index and
        scripts at once, and a cacheable answer makes each wait its turn for the cache entry the first is writing."""
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium("the site is not opened in a browser")


def _page_titles(site: Path) -> dict[str, str]:
    """Each built page's URL path and the h1 its Markdown source starts with, as the browser must show it."""
    titles = {}
    for source in sorted(DOCS.rglob("*.md")):
        text = source.read_text(encoding="utf-8")
        heading = re.search(r"^# (.+)$", text, re.M)
        assert heading, f"{source.relative_to(ROOT)} has no # title"
        relative = source.relative_to(DOCS).with_suffix("").as_posix()
        path = "/" if relative == "index" else f"/{relative}/"
        titles[path] = re.sub(r"[`*]", "", heading.group(1)).strip()
    return titles


HARNESS = """<!doctype html><html><head><meta charset="utf-8"><title>every page</title></head><body>
<pre id="results">pending</pre>
%s
<script>
window.addEventListener("load", () => {
  const results = {};
  for (const frame of document.querySelectorAll("iframe")) {
    const page = frame.contentDocument;
    const h1 = page && page.querySelector("article h1, .md-content h1");
    results[frame.dataset.path] = {
      title: page ? page.title : null,
      h1: h1 ? h1.textContent.replace("\u00b6", "").trim() : null,
      content: page ? page.querySelector(".md-content") !== null : false,
      stylesheet: page ? page.styleSheets.length : 0,
    };
  }
  document.getElementById("results").textContent = JSON.stringify(results);
});
</script></body></html>
"""


def test_every_page_renders_in_a_headless_browser(site: Path, served_site: str, chromium: str, tmp_path: Path) -> None:
    """One browser loads every page (an iframe each: the harness's load event waits for all of them) and reports
    each page's title, h1 and whether its theme's layout and stylesheets loaded."""
    titles = _page_titles(site)
    frames = "\n".join(f'<iframe data-path="{path}" src="{path}"></iframe>' for path in titles)
    (site / "every-page.html").write_text(HARNESS % frames, encoding="utf-8")
    result = headless(chromium, tmp_path / "profile", "--dump-dom", f"{served_site}/every-page.html")
    assert result.returncode == 0, result.stderr
    found = re.search(r'<pre id="results">(.*?)</pre>', result.stdout, re.S)
    assert found and found.group(1) != "pending", result.stdout[-2000:]
    shown = json.loads(html.unescape(found.group(1)))
    failures = [
        f"{path}: {shown.get(path)}, expected h1 {title!r}"
        for path, title in titles.items()
        if not shown.get(path)
        or shown[path]["h1"] != title
        or not shown[path]["content"]
        or not shown[path]["stylesheet"]
        or not shown[path]["title"]
    ]
    assert not failures, "\n".join(failures)


def test_screenshots_of_the_home_page_and_a_guide(served_site: str, chromium: str, tmp_path: Path) -> None:
    """PNGs a person can look at: in $LLPIPE_DOCS_SCREENSHOTS when set, else the test's temporary folder."""
    folder = Path(os.environ.get("LLPIPE_DOCS_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in (("home", "/"), ("guide-own-data", "/guides/own-data/")):
        target = folder / f"{name}.png"
        target.unlink(missing_ok=True)
        result = headless(
            chromium, tmp_path / "profile", f"--screenshot={target}", "--window-size=1280,1600", served_site + path
        )
        assert result.returncode == 0, result.stderr
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert target.stat().st_size > 20_000, f"{target} is nearly empty: the page did not render"

"""One vocabulary of content types (``containerlib.content_types``): parsing, and no other module spelling one.

The server, capture, the monitor and the definition read headers with the same function, so they cannot drift
apart; the scan below fails when a module outside ``containerlib/content_types.py`` writes a media type of its own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support import sources

from containerlib.content_types import (
    CSV,
    JSON,
    JSONLINES,
    JSONLINES_ALIASES,
    RECORDIO,
    media_type,
    response_type,
)

REPOSITORY = Path(__file__).resolve().parents[2]
VOCABULARY = "containerlib/content_types.py"
# a media type written in a string: text/..., application/..., or */* (not inside a path such as a/text/b)
# ``*/*`` is Accept's wildcard, not a path glob such as ``*/*/monitoring``
MEDIA_TYPE = re.compile(r"(?<![\w.+/-])(?:(?:text|application)/[A-Za-z0-9.+-]+|\*/\*(?![\w/*]))")
# the only media types written elsewhere: the AWS APIs' own HTTP protocol in the local AWS endpoint (S3's XML
# listings and object bodies, the JSON 1.1 protocol of SageMaker's API), which no container reads or writes
ALLOWED = {
    "pipeline/local/aws_endpoint.py": {"application/x-amz-json-1.1", "application/xml", "application/octet-stream"},
}


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("text/csv", CSV),
        ("text/csv; charset=utf-8", CSV),
        ("  Text/CSV ;label_size=1", CSV),
        ("application/json", JSON),
        ("APPLICATION/JSON; charset=UTF-8", JSON),
        ("application/jsonlines", JSONLINES),
        ("application/x-ndjson", JSONLINES),
        ("application/x-ndjson; charset=utf-8", JSONLINES),
        ("application/jsonl", JSONLINES),
        ("Application/X-JSONLines", JSONLINES),
        ("application/x-recordio-protobuf", RECORDIO),
        ("text/plain", "text/plain"),
    ],
)
def test_a_header_reads_as_its_media_type_with_json_lines_aliases(header: str, expected: str) -> None:
    assert media_type(header) == expected


def test_every_json_lines_alias_is_json_lines() -> None:
    assert {media_type(alias) for alias in JSONLINES_ALIASES} == {JSONLINES}


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        ("application/json", JSON),
        ("application/x-ndjson", JSONLINES),
        ("application/jsonlines; charset=utf-8", JSONLINES),
        ("text/html", None),
        ("text/csv", None),
    ],
)
def test_an_accept_header_asks_for_a_response_type_or_none(accept: str | None, expected: str | None) -> None:
    assert response_type(accept) == expected


def media_types_written(path: Path) -> set[str]:
    """The media types in ``path``'s string literals (f-string parts included), docstrings left out."""
    nodes = sources.nodes(path)
    docstrings = {
        id(node.value)
        for node in nodes
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    return {
        found
        for node in nodes
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        for found in MEDIA_TYPE.findall(node.value)
    }


def test_content_types_are_written_only_in_the_vocabulary_module() -> None:
    files = sources.project_files()  # outside the tests, hidden folders and virtual environments
    assert VOCABULARY in files and "serving/requests.py" in files and "dataquality/capture.py" in files
    written = {name: media_types_written(REPOSITORY / name) for name in files if name != VOCABULARY}
    stray = {name: sorted(found - ALLOWED.get(name, set())) for name, found in written.items()}
    assert {name: found for name, found in stray.items() if found} == {}
    # the allow-list holds nothing stale: each allowed type is still written where it is allowed
    assert {name: written[name] & allowed for name, allowed in ALLOWED.items()} == ALLOWED


def test_the_scan_finds_a_media_type_in_a_message_but_not_in_a_docstring(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        '"""Reads text/csv."""\n'
        'KIND = "application/x-ndjson"\n'
        'def f(kind):\n    """Answers application/json."""\n    return f"expected text/csv, not {kind}"\n'
        'PATH = "data/text/csv"\n'
    )
    assert media_types_written(module) == {"application/x-ndjson", "text/csv"}

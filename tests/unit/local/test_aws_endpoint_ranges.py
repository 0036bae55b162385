"""The local S3 endpoint's GetObject over real HTTP, as boto3 sees it: streamed bodies, ``Range`` as S3 reads it
(206 with Content-Range, 416 InvalidRange, several ranges ignored), and a client that stops reading early."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.aws_stubs import aws_session

from pipeline.local.aws_endpoint import SEND_BLOCK, RunningEndpoint, serve
from pipeline.local.s3 import LocalS3

SIZE = 3 * SEND_BLOCK + 1000  # several send blocks and a partial one
DATA = (bytes(range(251)) * (SIZE // 251 + 1))[:SIZE]  # a period prime to the block size: every slice differs
LARGE = 64 << 20  # more than loopback's socket buffers hold (tcp_rmem max 32 MB + tcp_wmem max 4 MB here)


def client_of(running: RunningEndpoint) -> Any:
    """A boto3 S3 client of the endpoint with its own connection pool."""
    session = aws_session()
    return session.client("s3", endpoint_url=running.url)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningEndpoint, Any, LocalS3]]:
    """One endpoint for the module (stopping one takes its server's 0.5 s poll interval)."""
    folder = tmp_path_factory.mktemp("endpoint")
    s3 = LocalS3(folder / "s3")
    s3.put_bytes("s3://bkt/data.bin", DATA)
    s3.put_bytes("s3://bkt/empty.bin", b"")
    with serve(s3, folder / "registry.db", "us-east-1") as running:
        yield running, client_of(running), s3


@pytest.fixture
def endpoint(served: tuple[RunningEndpoint, Any, LocalS3]) -> tuple[RunningEndpoint, Any, LocalS3]:
    """The module's endpoint with its request log emptied: each test asserts the requests it made."""
    served[0].endpoint.requests.clear()
    return served


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=0-99", 0, 99),
        ("bytes=1000-1000", 1000, 1000),  # one byte
        (f"bytes={SEND_BLOCK - 10}-{2 * SEND_BLOCK + 10}", SEND_BLOCK - 10, 2 * SEND_BLOCK + 10),  # across blocks
        (f"bytes={SIZE - 50}-{SIZE + 5000}", SIZE - 50, SIZE - 1),  # the end past the object: cut at its end
        ("bytes=12345-", 12345, SIZE - 1),
        ("bytes=-700", SIZE - 700, SIZE - 1),
        (f"bytes=-{SIZE + 1}", 0, SIZE - 1),  # a suffix longer than the object: all of it
    ],
)
def test_each_range_form_returns_the_file_slice_with_s3s_content_range(
    endpoint: Any, header: str, first: int, last: int
) -> None:
    running, client, _ = endpoint
    response = client.get_object(Bucket="bkt", Key="data.bin", Range=header)
    assert response["Body"].read() == DATA[first : last + 1]
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert response["ContentRange"] == f"bytes {first}-{last}/{SIZE}"
    assert response["ContentLength"] == last - first + 1
    assert response["AcceptRanges"] == "bytes"
    assert running.endpoint.requests == [
        {"service": "s3", "operation": "GetObject", "parameters": {"Bucket": "bkt", "Key": "data.bin", "Range": header}}
    ]


@pytest.mark.parametrize("header", ["bytes=0-9,20-29", "bytes=50-10", "bytes=-", "bytes=a-b", "items=0-9"])
def test_several_ranges_or_one_s3_cannot_read_return_the_whole_object(endpoint: Any, header: str) -> None:
    """S3 serves no multipart/byteranges and ignores a Range it cannot read: 200, the whole object, no ContentRange."""
    _, client, _ = endpoint
    response = client.get_object(Bucket="bkt", Key="data.bin", Range=header)
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert "ContentRange" not in response and response["ContentLength"] == SIZE
    assert response["Body"].read() == DATA


@pytest.mark.parametrize(
    ("key", "header", "size"),
    [
        ("data.bin", f"bytes={SIZE}-", SIZE),
        ("data.bin", f"bytes={SIZE + 10}-{SIZE + 20}", SIZE),
        ("empty.bin", "bytes=0-", 0),
        ("empty.bin", "bytes=-10", 0),
        ("data.bin", "bytes=-0", SIZE),
    ],
)
def test_a_range_that_selects_nothing_is_416_invalid_range(endpoint: Any, key: str, header: str, size: int) -> None:
    _, client, _ = endpoint
    with pytest.raises(ClientError) as raised:
        client.get_object(Bucket="bkt", Key=key, Range=header)
    response = raised.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 416
    assert response["Error"] == {
        "Code": "InvalidRange",
        "Message": "The requested range is not satisfiable",
        "RangeRequested": header,
        "ActualObjectSize": str(size),
    }
    assert response["ResponseMetadata"]["HTTPHeaders"]["content-range"] == f"bytes */{size}"


def test_head_and_whole_gets_say_accept_ranges_and_a_stable_etag(endpoint: Any) -> None:
    running, client, s3 = endpoint
    s3.put_bytes("s3://bkt/rewritten.bin", DATA)
    head = client.head_object(Bucket="bkt", Key="rewritten.bin")
    whole = client.get_object(Bucket="bkt", Key="rewritten.bin")
    assert whole["Body"].read() == DATA and whole["ContentLength"] == head["ContentLength"] == SIZE
    assert head["AcceptRanges"] == whole["AcceptRanges"] == "bytes" and "ContentRange" not in whole
    assert head["ETag"] == whole["ETag"]
    s3.put_bytes("s3://bkt/rewritten.bin", DATA[::-1])  # rewritten (same size): a new ETag
    assert client.head_object(Bucket="bkt", Key="rewritten.bin")["ETag"] != head["ETag"]
    assert [request["parameters"] for request in running.endpoint.requests] == [
        {"Bucket": "bkt", "Key": "rewritten.bin"}
    ] * 3


def test_an_empty_object_is_served_whole_with_no_range(endpoint: Any) -> None:
    _, client, _ = endpoint
    response = client.get_object(Bucket="bkt", Key="empty.bin")
    assert response["Body"].read() == b"" and response["ContentLength"] == 0 and "ContentRange" not in response


def open_descriptors_of(path: Path) -> list[str]:
    """This process's file descriptors open on ``path``."""
    found = []
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{descriptor}") == str(path):
                found.append(descriptor)
        except OSError:  # closed while listing (the listing's own descriptor among them)
            pass
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the open file descriptors")
def test_a_client_that_closes_early_ends_the_transfer_quietly_and_the_file_is_closed(
    endpoint: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    running, _, s3 = endpoint
    large = s3.path("s3://bkt/large.bin")
    with large.open("wb") as file:  # sparse: 64 MB without writing them
        file.write(DATA[:1000])
        file.truncate(LARGE)
    cut_short, before = running.endpoint.cut_short, set(threading.enumerate())
    client = client_of(running)  # its own connection (the module's client keeps one alive), so its own thread
    body = client.get_object(Bucket="bkt", Key="large.bin")["Body"]
    assert body.read(1000) == DATA[:1000]
    assert open_descriptors_of(large)  # the endpoint is sending it, a block at a time
    body.close()  # the client stops reading: its connection closes with the rest unread

    assert running.endpoint.wait_until_sent(timeout=60), "the transfer did not end after the client closed"
    assert running.endpoint.cut_short == cut_short + 1
    assert open_descriptors_of(large) == []
    for thread in set(threading.enumerate()) - before:  # the connection's handler thread ends
        thread.join(timeout=60)
        assert not thread.is_alive(), thread
    # the endpoint still serves, and said nothing on stderr (no traceback of the broken connection)
    assert client.get_object(Bucket="bkt", Key="data.bin", Range="bytes=0-9")["Body"].read() == DATA[:10]
    assert running.endpoint.wait_until_sent(timeout=60) and running.endpoint.cut_short == cut_short + 1
    captured = capfd.readouterr()
    assert captured.err == "", captured.err


def test_a_bug_while_answering_reaches_the_client_as_internal_error_and_the_file_is_closed(
    endpoint: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.config import Config

    from pipeline.local import aws_endpoint

    running, _, s3 = endpoint

    def broken(header: str | None, size: int) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(aws_endpoint, "byte_range", broken)
    session = aws_session()
    client = session.client("s3", endpoint_url=running.url, config=Config(retries={"total_max_attempts": 1}))
    with pytest.raises(ClientError, match=r"InternalError.*RuntimeError: a bug"):
        client.get_object(Bucket="bkt", Key="data.bin", Range="bytes=0-9")
    assert open_descriptors_of(s3.path("s3://bkt/data.bin")) == []

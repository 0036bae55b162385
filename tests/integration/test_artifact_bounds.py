"""Model artifacts are read with a bound: a crafted ``model.tar.gz`` of a few MB that inflates to gigabytes (issue
42: 1.5 MB took 3.2 GB in ``serve``, transform and Evaluate's champion) is refused from its headers, in bounded
memory, by the Linear Learner reader and the featurizer's model-data reader alike; real artifacts still read."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from containerlib.linear_learner.model import (
    INNER_MEMBER,
    MAX_TAR_MEMBERS,
    PARAMS,
    LinearModel,
    ModelArtifactError,
    params_limit,
    read_model,
    read_model_bytes,
)
from containerlib.linear_learner.writer import artifact_bytes

MODEL = LinearModel("binary_classifier", "logistic", np.ones((3, 1), np.float32), np.zeros(1, np.float32))


def bomb(path: Path, members: list[tuple[str, int]]) -> Path:
    """A gzip tar (one gzip stream) whose members (name, size) hold zeros: each MiB of zeros deflated once, after a
    full flush, and its bytes repeated, so gigabytes cost a few MB and no time. No gzip trailer: a reader that
    inflated it all would only then find that out."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)

    def packed(data: bytes) -> bytes:
        return deflate.compress(data) + deflate.flush(zlib.Z_FULL_FLUSH)

    with path.open("wb") as out:
        for name, size in members:
            out.write(packed(_header(name, size)))
            if size >= 2**20:
                mebibyte = packed(bytes(2**20))
                assert packed(bytes(2**20)) == mebibyte  # the same bytes every time: repeatable
                out.write(mebibyte * (size // 2**20 - 1))
            out.write(packed(bytes(size % 2**20 + (-size) % 512)))  # the member's last bytes, the tar's padding
        out.write(packed(bytes(1024)) + deflate.flush())  # the tar's end: two zero blocks
    return path


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def refused_in_a_subprocess(code: str) -> tuple[str, int]:
    """Run ``code`` (which reads a crafted artifact and prints the error) in a fresh interpreter; its output and
    its peak resident memory in MB."""
    # VmHWM, the high-water mark of this process's own memory: ru_maxrss would also count the pytest worker's, which
    # the kernel carries into a spawned child at exec
    peak = "int(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:'))) // 1024"
    script = f"import sys\n{code}\nprint('PEAK', {peak})\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    said, peak = done.stdout.rsplit("PEAK ", 1)
    return said.strip(), int(peak)


READ = """
from containerlib.linear_learner.model import ModelArtifactError, read_model
try:
    read_model(sys.argv[1] if len(sys.argv) > 1 else {path!r}, {feature_dim})
    print("ACCEPTED")
except ModelArtifactError as error:
    print(error)
"""


@pytest.mark.parametrize(
    ("members", "named"),
    [
        ([(INNER_MEMBER, 2 * 2**30)], f"its tar member '{INNER_MEMBER}' unpacks to 2,147,483,648 bytes"),
        ([("padding", 3 * 2**30), (INNER_MEMBER, 10)], "its tar member 'padding' unpacks to 3,221,225,472 bytes"),
        ([(f"m{index}", 1) for index in range(MAX_TAR_MEMBERS + 1)], f"in {MAX_TAR_MEMBERS + 1} member(s)"),
    ],
    ids=["inner-member-2GB", "member-before-it-3GB", "too-many-members"],
)
def test_a_tar_that_inflates_beyond_the_bound_is_refused_in_bounded_memory(
    tmp_path: Path, members: list[tuple[str, int]], named: str
) -> None:
    path = bomb(tmp_path / "model.tar.gz", members)
    assert path.stat().st_size < 4 * 2**20  # megabytes on disk
    said, peak = refused_in_a_subprocess(READ.format(path=str(path), feature_dim=30))
    assert said.startswith(f"{path}: ") and named in said and "refused unread" in said
    assert peak < 250, f"peak resident memory {peak} MB"


def test_a_zip_member_above_the_feature_dim_s_bound_is_refused(tmp_path: Path) -> None:
    """The tar is small, the zip inside declares a parameters member far above what 2 features can need."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("manifest.json", "additional-params.json", "mx-mod-symbol.json"):
            archive.writestr(name, "{}")
        archive.writestr(PARAMS, bytes(params_limit(2) + 1))
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w:gz") as tar:
        info = tarfile.TarInfo(INNER_MEMBER)
        info.size = len(inner.getvalue())
        tar.addfile(info, io.BytesIO(inner.getvalue()))
    with pytest.raises(ModelArtifactError, match=rf"{INNER_MEMBER}/{PARAMS} unpacks to 12,004,097 bytes"):
        read_model_bytes(outer.getvalue(), "s3://b/model.tar.gz", feature_dim=2)
    # without a feature_dim the bound is the absolute one: read, then refused for what it holds
    with pytest.raises(ModelArtifactError, match=r"manifest\.json: expected \"mx-mod\""):
        read_model_bytes(outer.getvalue(), "s3://b/model.tar.gz")


@pytest.mark.parametrize("feature_dim", [None, 3])
def test_real_artifacts_still_read_from_a_file_and_from_bytes(tmp_path: Path, feature_dim: int | None) -> None:
    data = artifact_bytes(MODEL)
    (tmp_path / "model.tar.gz").write_bytes(data)
    for model in (read_model(tmp_path / "model.tar.gz", feature_dim), read_model_bytes(data, "m", feature_dim)):
        assert model.feature_dim == 3 and model.predict(np.ones((1, 3)))[1].tolist() == [1]


def test_a_truncated_gzip_is_named(tmp_path: Path) -> None:
    data = artifact_bytes(MODEL)
    with pytest.raises(ModelArtifactError, match=r"^m: not a complete gzip file or tar archive"):
        read_model_bytes(data[: len(data) // 2], "m")


def test_the_featurizer_s_model_data_is_bounded_too(tmp_path: Path) -> None:
    """``serve`` reads the featurizer's schema and summary from its model.tar.gz: a 2 GB member is refused unread."""
    path = bomb(tmp_path / "model.tar.gz", [("schema.json", 2 * 2**30)])
    code = f"""
from serving.model import model_documents
try:
    model_documents({str(path)!r})
    print("ACCEPTED")
except ValueError as error:
    print(error)
"""
    said, peak = refused_in_a_subprocess(code)
    assert said.startswith(f"{path}: member 'schema.json' (2,147,483,648 bytes, member 1)") and "refused" in said
    assert peak < 250, f"peak resident memory {peak} MB"
    # a real one: the two documents, found in any order
    documents = {"summary.json": {"feature_dim": 1}, "schema.json": {"feature_columns": ["a"]}}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, document in documents.items():
            body = json.dumps(document).encode()
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    buffer.seek(0)
    from serving.model import model_documents

    assert model_documents(buffer) == documents

"""The RecordIO-protobuf codec against an independent oracle: the protobuf runtime on tests/support/recordio.proto.

The oracle writers follow SDK v2's ``write_numpy_to_dense_tensor`` / ``write_spmatrix_to_sparse_tensor`` (one
protobuf message per row, in tests/support/protobuf_oracle.py) and dmlc's RecordIO writer (records split around the
magic number, below).
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import scipy.sparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.protobuf_oracle import MAGIC_AS_FLOAT32, dmlc_split_frames, frame, payloads, v2_dense, v2_sparse

from containerlib import recordio
from containerlib.recordio import MAGIC, RecordIOError

MAGIC_BYTES = struct.pack("<I", MAGIC)


# ---------------------------------------------------------------------------------------------------------------
# oracle: per-row protobuf writers and a plain frame reader


def write(writer, X, y=None) -> bytes:
    out = io.BytesIO()
    assert writer(out, X, y) == X.shape[0]
    return out.getvalue()


def assert_same_dense(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == np.float32 and actual.shape == expected.shape
    assert np.array_equal(actual.view(np.uint32), np.asarray(expected, dtype=np.float32).view(np.uint32))


def assert_same_sparse(actual, expected) -> None:
    assert scipy.sparse.isspmatrix_csr(actual) or actual.format == "csr"
    assert actual.shape == expected.shape and actual.dtype == np.float32
    expected = expected.tocsr()
    assert np.array_equal(actual.indptr, expected.indptr)
    assert np.array_equal(actual.indices, expected.indices)
    assert np.array_equal(actual.data.view(np.uint32), expected.data.astype(np.float32).view(np.uint32))


def read_bytes(data: bytes):
    return recordio.read(io.BytesIO(data))


rng = np.random.default_rng(7)


def dense_data(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal((rows, cols)).astype(np.float32), rng.integers(0, 3, rows).astype(np.float32)


def sparse_data(rows: int, cols: int, density: float) -> scipy.sparse.csr_matrix:
    """About ``density`` of each row stored, at sorted distinct random columns (fast for a million columns)."""
    per_row = max(1, round(density * cols))
    keys = np.sort(rng.integers(0, cols, size=(rows, per_row)), axis=1)
    keep = np.ones(keys.shape, dtype=bool)
    keep[:, 1:] = keys[:, 1:] != keys[:, :-1]
    indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
    values = rng.standard_normal(int(indptr[-1])).astype(np.float32)
    return scipy.sparse.csr_matrix((values, keys[keep], indptr), shape=(rows, cols))


# ---------------------------------------------------------------------------------------------------------------
# byte identity and round trips


@pytest.mark.parametrize("cols", [1, 2, 31, 100, 10_000])
@pytest.mark.parametrize("labelled", [False, True])
def test_dense_bytes_match_the_per_row_protobuf_writer(record_protobuf: ModuleType, cols: int, labelled: bool) -> None:
    X, y = dense_data(5 if cols == 10_000 else 40, cols)
    labels = y if labelled else None
    data = write(recordio.write_dense, X, labels)
    assert data == v2_dense(record_protobuf, X, labels)
    X_read, y_read = read_bytes(data)
    assert_same_dense(X_read, X)
    assert (y_read is None) if not labelled else np.array_equal(y_read, y)


@pytest.mark.parametrize("cols", [1, 10, 1_000_000])
@pytest.mark.parametrize("labelled", [False, True])
def test_sparse_bytes_match_the_per_row_protobuf_writer(record_protobuf: ModuleType, cols: int, labelled: bool) -> None:
    X = sparse_data(30, cols, min(1.0, 25 / cols))
    X = scipy.sparse.vstack([scipy.sparse.csr_matrix((2, cols), dtype=np.float32), X]).tocsr()  # empty rows first
    y = rng.standard_normal(X.shape[0]).astype(np.float32) if labelled else None
    data = write(recordio.write_sparse, X, y)
    assert data == v2_sparse(record_protobuf, X, y)
    X_read, y_read = read_bytes(data)
    assert_same_sparse(X_read, X)
    assert (y_read is None) if y is None else np.array_equal(y_read, y)


def test_long_sparse_rows_with_keys_of_every_varint_width_read_back(record_protobuf: ModuleType) -> None:
    """Rows long enough to be copied region by region, keys from 1 to 5 varint bytes (2**31 - 1 columns)."""
    cols = (1 << 31) - 1
    keys = np.unique(np.concatenate([rng.integers(0, min(1 << (7 * w), cols), 150) for w in range(1, 6)]))
    rows = [keys[rng.random(keys.size) < 0.8] for _ in range(4)] + [np.empty(0, dtype=np.int64), keys]
    indptr = np.concatenate([[0], np.cumsum([row.size for row in rows])])
    values = rng.standard_normal(int(indptr[-1])).astype(np.float32)
    X = scipy.sparse.csr_matrix((values, np.concatenate(rows), indptr), shape=(len(rows), cols))
    y = rng.standard_normal(len(rows)).astype(np.float32)
    data = write(recordio.write_sparse, X, y)
    assert data == v2_sparse(record_protobuf, X, y)
    X_read, y_read = read_bytes(data)
    assert_same_sparse(X_read, X)
    assert np.array_equal(y_read, y)


@pytest.mark.parametrize("order", ["sorted", "shuffled", "descending"])
def test_varints_flat_are_python_varints_back_to_back(order: str) -> None:
    """varints_flat against Python's own encoding: keys of 1 to 5 bytes, sorted (long runs of whole-width varints,
    copied as slices, between short runs), shuffled (cut by one mask) and descending (the whole-width run first)."""
    from containerlib.recordio.varints import varint_bytes, varints_flat

    values = np.sort(np.concatenate([rng.integers(1 << (7 * w - 7), 1 << (7 * w), 400) for w in range(1, 6)]))
    values = {"sorted": values, "shuffled": rng.permutation(values), "descending": values[::-1]}[order]
    encoded, lengths = varints_flat(values.astype(np.uint64))
    assert encoded.tobytes() == b"".join(varint_bytes(int(value)) for value in values)
    assert lengths.tolist() == [len(varint_bytes(int(value))) for value in values]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=60), st.integers(0, 3))
def test_varint_regions_decode_every_width(values: list[int], cut: int) -> None:
    """decode_varint_regions against Python's own encoding, values from 1 to 10 bytes, split into two regions."""
    from containerlib.recordio.varints import decode_varint_regions, varint_bytes

    encoded = [varint_bytes(value) for value in values]
    split = min(cut, len(values))
    lengths = np.array([sum(map(len, encoded[:split])), sum(map(len, encoded[split:]))], dtype=np.int64)
    decoded, counts = decode_varint_regions(np.frombuffer(b"".join(encoded), dtype=np.uint8), lengths)
    assert decoded.astype(np.uint64).tolist() == values
    assert counts.tolist() == [split, len(values) - split]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, (1 << 21) - 1), max_size=40, unique=True), min_size=1, max_size=4),
    st.integers(0, 10_000),
    st.integers(0, 7),
    st.booleans(),
)
def test_increasing_keys_decode_as_the_generic_decoder_or_not_at_all(
    rows: list[list[int]], where: int, bit: int, corrupt: bool
) -> None:
    """decode_increasing_regions (long sparse rows' keys) gives exactly decode_varint_regions' values, or declines:
    keys sorted or not, a bit of one byte flipped or not."""
    from containerlib.recordio.varints import decode_increasing_regions, decode_varint_regions, varint_bytes

    keys = [sorted(row) for row in rows]
    regions = [b"".join(varint_bytes(key) for key in row) for row in keys]
    data = bytearray(b"\x1a".join(regions) + b"\x1a\x1a\x1a")  # other bytes between and after, as in a record
    if corrupt and data:
        data[where % len(data)] ^= 1 << bit
    lengths = np.array([len(region) for region in regions], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    counts = np.array([len(row) for row in keys], dtype=np.int64)
    array = np.frombuffer(bytes(data), dtype=np.uint8)
    out = np.empty(int(counts.sum()), dtype=np.uint32)
    if decode_increasing_regions(array, starts, lengths, counts, out):
        expected, expected_counts = decode_varint_regions(
            np.concatenate([array[a : a + n] for a, n in np.stack([starts, lengths], axis=1).tolist()]), lengths
        )
        assert out.tolist() == expected.tolist() and expected_counts.tolist() == counts.tolist()
    else:
        assert corrupt, "uncorrupted increasing keys below 2**21 always decode"


def test_long_rows_of_increasing_keys_read_back(record_protobuf: ModuleType) -> None:
    """Rows long enough for the increasing-keys decoder (keys of 1, 2 and 3 bytes), and a row whose keys are not
    increasing, which the generic decoder reads."""
    cols = 1 << 21
    rows = [np.unique(rng.integers(0, cols, 3000)) for _ in range(3)]
    rows[1] = np.concatenate([np.arange(0, 128, 3), rows[1][rows[1] >= 128]])  # one-byte keys first
    rows.append(rng.permutation(rows[2]))  # stored order kept
    indptr = np.concatenate([[0], np.cumsum([row.size for row in rows])])
    X = scipy.sparse.csr_matrix(
        (rng.standard_normal(int(indptr[-1])).astype(np.float32), np.concatenate(rows), indptr), shape=(4, cols)
    )
    y = rng.standard_normal(4).astype(np.float32)
    data = write(recordio.write_sparse, X, y)
    assert data == v2_sparse(record_protobuf, X, y)
    X_read, y_read = read_bytes(data)
    assert_same_sparse(X_read, X)
    assert np.array_equal(y_read, y)


def test_sparse_keeps_stored_order_and_explicit_zeros(record_protobuf: ModuleType) -> None:
    X = scipy.sparse.csr_matrix(
        (np.array([0.0, 2.5, -1.0], np.float32), np.array([7, 3, 0]), np.array([0, 2, 3])), shape=(2, 9)
    )
    data = write(recordio.write_sparse, X)
    assert data == v2_sparse(record_protobuf, X)
    X_read, _ = read_bytes(data)
    assert_same_sparse(X_read, X)


def test_codec_output_decodes_with_the_protobuf_runtime(record_protobuf: ModuleType) -> None:
    X, y = dense_data(20, 13)
    for i, payload in enumerate(payloads(write(recordio.write_dense, X, y))):
        record = record_protobuf.Record.FromString(payload)
        assert list(record.features["values"].float32_tensor.values) == X[i].tolist()
        assert list(record.label["values"].float32_tensor.values) == [y[i]]
        assert not record.features["values"].float32_tensor.keys
    S = sparse_data(20, 5000, 0.01)
    for i, payload in enumerate(payloads(write(recordio.write_sparse, S))):
        tensor = record_protobuf.Record.FromString(payload).features["values"].float32_tensor
        row = S.getrow(i)
        assert list(tensor.values) == row.data.tolist()
        assert list(tensor.keys) == row.indices.tolist()
        assert list(tensor.shape) == [5000]


def test_float64_input_is_written_as_float32() -> None:
    X = np.array([[0.1, 2.0], [3.0, -4.0]])
    assert write(recordio.write_dense, X, np.array([1, 0])) == write(
        recordio.write_dense, X.astype(np.float32), np.array([1.0, 0.0], np.float32)
    )


def test_features_sliced_from_wider_rows_write_the_same_bytes_as_a_copy() -> None:
    """Preprocess passes rows[:, :-1] (features before the label) uncopied; other strides are copied first."""
    rows = np.random.default_rng(3).normal(size=(300, 8)).astype(np.float32)
    expected = write(recordio.write_dense, np.ascontiguousarray(rows[:, :-1]), rows[:, -1].copy())
    assert write(recordio.write_dense, rows[:, :-1], rows[:, -1]) == expected
    backwards = rows[::-1]  # a negative row stride
    reversed_copy = write(recordio.write_dense, np.ascontiguousarray(backwards[:, :-1]), backwards[:, -1].copy())
    assert write(recordio.write_dense, backwards[:, :-1], backwards[:, -1]) == reversed_copy
    assert write(recordio.write_dense, np.asfortranarray(rows[:, :-1]), rows[:, -1]) == expected


def test_float64_int32_tensors_and_label_types_read_back(record_protobuf: ModuleType) -> None:
    out = b""
    for i in range(3):
        record = record_protobuf.Record()
        record.features["values"].float64_tensor.values.extend([i + 0.5, -1.0])
        record.label["values"].int32_tensor.values.extend([i - 1])
        out += frame(record.SerializeToString())
    X, y = read_bytes(out)
    assert_same_dense(X, np.array([[0.5, -1], [1.5, -1], [2.5, -1]]))
    assert np.array_equal(y, np.array([-1, 0, 1], np.float32))
    out = b""
    for i in range(2):
        record = record_protobuf.Record()
        record.features["values"].int32_tensor.values.extend([-3, i, 1 << 30])
        record.label["values"].float64_tensor.values.extend([0.25])
        out += frame(record.SerializeToString())
    X, y = read_bytes(out)
    assert_same_dense(X, np.array([[-3, 0, 1 << 30], [-3, 1, 1 << 30]]))
    assert np.array_equal(y, [0.25, 0.25])


def test_unusual_layouts_written_by_protobuf_read_back(record_protobuf: ModuleType) -> None:
    """uid/metadata fields, label before features, an unpacked value: the general parser handles them."""
    expected = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    records = []
    first = record_protobuf.Record(uid="row-0", metadata='{"source": "test"}')
    first.features["values"].float32_tensor.values.extend(expected[0])
    first.label["values"].float32_tensor.values.append(1.0)
    records.append(first.SerializeToString())
    label_only = record_protobuf.Record()
    label_only.label["values"].float32_tensor.values.append(0.0)
    features_only = record_protobuf.Record()
    features_only.features["values"].float32_tensor.values.extend(expected[1])
    records.append(label_only.SerializeToString() + features_only.SerializeToString())  # merged: label first
    # field 1 unpacked: map entry > Value > Float32Tensor with two separate fixed32 elements (wire type 5)
    tensor = b"\x0d" + struct.pack("<f", 5.0) + b"\x0d" + struct.pack("<f", 6.0)
    value = b"\x12" + bytes([len(tensor)]) + tensor
    entry = b"\x0a\x06values\x12" + bytes([len(value)]) + value
    label = record_protobuf.Record()
    label.label["values"].float32_tensor.values.append(1.0)
    records.append(b"\x0a" + bytes([len(entry)]) + entry + label.SerializeToString())
    X, y = read_bytes(b"".join(frame(r) for r in records))
    assert_same_dense(X, expected)
    assert np.array_equal(y, [1.0, 0.0, 1.0])
    for i, r in enumerate(records):  # the oracle agrees with what the codec read
        assert list(record_protobuf.Record.FromString(r).features["values"].float32_tensor.values) == list(expected[i])


def test_records_split_with_the_continuation_flag_read_back(record_protobuf: ModuleType) -> None:
    X, y = dense_data(6, 100)
    X[1, 0] = MAGIC_AS_FLOAT32  # feature floats start at payload offset 20, so these land on aligned positions
    X[1, 50] = MAGIC_AS_FLOAT32
    X[4, 99] = MAGIC_AS_FLOAT32
    split = b"".join(dmlc_split_frames(p) for p in payloads(v2_dense(record_protobuf, X, y)))
    flags = {struct.unpack_from("<I", split, i)[0] >> 29 for i in range(4, len(split), 4)}
    assert {1, 2, 3} <= flags  # the oracle really split records
    X_read, y_read = read_bytes(split)
    assert_same_dense(X_read, X)
    assert np.array_equal(y_read, y)
    batches = list(recordio.iter_batches(io.BytesIO(split), 4))
    assert [b[0].shape[0] for b in batches] == [4, 2]
    assert_same_dense(np.concatenate([b[0] for b in batches]), X)


def test_unsplit_magic_numbers_inside_payloads_are_not_frames() -> None:
    """SDK v2 never splits records: magic-number bytes inside a sparse payload must not be taken as frames."""
    X = sparse_data(300, 4000, 0.01)
    X.data[:] = MAGIC_AS_FLOAT32
    X_read, _ = read_bytes(write(recordio.write_sparse, X))
    assert_same_sparse(X_read, X)


def test_single_row_and_empty_inputs() -> None:
    X, y = dense_data(1, 4)
    X_read, y_read = read_bytes(write(recordio.write_dense, X, y))
    assert_same_dense(X_read, X)
    assert np.array_equal(y_read, y)
    X_read, y_read = read_bytes(b"")
    assert X_read.shape == (0, 0) and y_read is None
    S = scipy.sparse.csr_matrix((3, 50), dtype=np.float32)
    S_read, _ = read_bytes(write(recordio.write_sparse, S))
    assert_same_sparse(S_read, S)


@pytest.mark.parametrize("batch_size", [1, 7, 64, 10_000])
def test_iter_batches_streams_the_same_records(batch_size: int) -> None:
    X, y = dense_data(130, 9)
    data = write(recordio.write_dense, X, y)
    batches = list(recordio.iter_batches(io.BytesIO(data), batch_size))
    assert all(b[0].shape[0] == batch_size for b in batches[:-1]) and 0 < batches[-1][0].shape[0] <= batch_size
    assert_same_dense(np.concatenate([b[0] for b in batches]), X)
    assert np.array_equal(np.concatenate([b[1] for b in batches]), y)
    S = sparse_data(130, 700, 0.02)
    batches = list(recordio.iter_batches(io.BytesIO(write(recordio.write_sparse, S)), batch_size))
    assert_same_sparse(scipy.sparse.vstack([b[0] for b in batches], format="csr"), S)
    assert all(b[1] is None for b in batches)


def test_streaming_reads_cut_records_at_chunk_boundaries(tmp_path: Path) -> None:
    """Files larger than one read: batches are assembled across reads that end in the middle of records."""
    X, y = dense_data(30_000, 21)
    S = sparse_data(3_000, 50_000, 0.004)
    for writer, matrix in ((recordio.write_dense, X), (recordio.write_sparse, S)):
        path = tmp_path / "big.rec"
        with open(path, "wb") as out:
            writer(out, matrix, y[: matrix.shape[0]])
        assert path.stat().st_size > 2 << 20
        with open(path, "rb") as fileobj:
            batches = list(recordio.iter_batches(fileobj, 4_099))
        assert [b[0].shape[0] for b in batches[:-1]] == [4_099] * (len(batches) - 1)
        assert np.array_equal(np.concatenate([b[1] for b in batches]), y[: matrix.shape[0]])
        if writer is recordio.write_dense:
            assert_same_dense(np.concatenate([b[0] for b in batches]), X)
        else:
            assert_same_sparse(scipy.sparse.vstack([b[0] for b in batches], format="csr"), S)


def test_read_from_a_real_file(tmp_path: Path) -> None:
    X, y = dense_data(50, 6)
    path = tmp_path / "part-0.rec"
    with open(path, "wb") as out:
        recordio.write_dense(out, X, y)
    X_read, y_read = recordio.read_file(path)
    assert_same_dense(X_read, X)
    assert np.array_equal(y_read, y)


# ---------------------------------------------------------------------------------------------------------------
# property-based


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    X=hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=24), elements=finite32),
    labelled=st.booleans(),
)
def test_dense_round_trip_and_byte_identity_property(
    record_protobuf: ModuleType, X: np.ndarray, labelled: bool
) -> None:
    y = np.arange(X.shape[0], dtype=np.float32) - 3.5 if labelled else None
    data = write(recordio.write_dense, X, y)
    assert data == v2_dense(record_protobuf, X, y)
    X_read, y_read = read_bytes(data)
    assert_same_dense(X_read, X)
    assert (y_read is None) if y is None else np.array_equal(y_read, y)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.integers(1, 20),
    cols=st.integers(1, 3000),
    density=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
    labelled=st.booleans(),
)
def test_sparse_round_trip_and_byte_identity_property(
    record_protobuf: ModuleType, rows: int, cols: int, density: float, seed: int, labelled: bool
) -> None:
    local = np.random.default_rng(seed)
    density = min(density, 40 / cols)
    X = scipy.sparse.random(rows, cols, density=density, format="csr", dtype=np.float32, random_state=seed)
    X.data = local.standard_normal(X.nnz).astype(np.float32) * 1e4
    y = local.standard_normal(rows).astype(np.float32) if labelled else None
    data = write(recordio.write_sparse, X, y)
    assert data == v2_sparse(record_protobuf, X, y)
    X_read, y_read = read_bytes(data)
    assert_same_sparse(X_read, X)
    assert (y_read is None) if y is None else np.array_equal(y_read, y)


@settings(max_examples=150, deadline=None)
@given(prefix_records=st.integers(0, 3), garbage=st.binary(max_size=120))
def test_arbitrary_bytes_never_hang_or_crash(prefix_records: int, garbage: bytes) -> None:
    """Any byte string either decodes or raises RecordIOError: never another exception, never a hang."""
    X, y = dense_data(prefix_records, 3)
    data = (write(recordio.write_dense, X, y) if prefix_records else b"") + garbage
    try:
        read_bytes(data)
    except RecordIOError as error:
        assert error.offset >= 0 and error.record_index >= prefix_records - 0
    try:
        read_bytes(MAGIC_BYTES + struct.pack("<I", len(garbage)) + garbage + b"\0" * (-len(garbage) % 4))
    except RecordIOError as error:
        assert error.record_index == 0 and error.offset == 0


# ---------------------------------------------------------------------------------------------------------------
# corrupt input


def read_error(data: bytes, name: str | None = None) -> RecordIOError:
    fileobj = io.BytesIO(data)
    if name:
        fileobj.name = name  # type: ignore[attr-defined]
    with pytest.raises(RecordIOError) as caught:
        recordio.read(fileobj)
    return caught.value


def test_wrong_magic_names_file_offset_and_record() -> None:
    X, y = dense_data(10, 4)
    data = bytearray(write(recordio.write_dense, X, y))
    stride = len(data) // 10
    data[3 * stride] ^= 0xFF
    error = read_error(bytes(data), "train/part-0.rec")
    assert (error.offset, error.record_index) == (3 * stride, 3)
    assert str(error).startswith("train/part-0.rec: record 3 at byte offset")
    assert "magic" in str(error)
    error = read_error(b"a,b,c\n1,2,3\n")
    assert (error.offset, error.record_index) == (0, 0) and "magic" in str(error)


def test_truncated_header_and_payload() -> None:
    X, y = dense_data(5, 8)
    data = write(recordio.write_dense, X, y)
    stride = len(data) // 5
    error = read_error(data[: 4 * stride + 5])
    assert (error.offset, error.record_index) == (4 * stride, 4) and "header" in str(error)
    error = read_error(data[: 4 * stride + 30])
    assert (error.offset, error.record_index) == (4 * stride, 4) and "truncated" in str(error)
    S = sparse_data(6, 300, 0.05)
    sparse_bytes = write(recordio.write_sparse, S)
    error = read_error(sparse_bytes[:-3])
    assert error.record_index == 5 and "truncated" in str(error)
    with pytest.raises(RecordIOError, match="truncated"):
        list(recordio.iter_batches(io.BytesIO(sparse_bytes[:-3]), 2))


def test_bad_protobuf_names_the_record() -> None:
    X, y = dense_data(4, 3)
    good = payloads(write(recordio.write_dense, X, y))
    data = b"".join(frame(p) for p in good[:2]) + frame(b"\x0a\xff\xff\xff\x7f") + frame(good[3])
    error = read_error(data)
    assert error.record_index == 2 and error.offset == 2 * len(frame(good[0])) and "protobuf" in str(error)
    error = read_error(frame(good[0]) + frame(b"\x0a\x04ab"))  # a field longer than its message
    assert error.record_index == 1 and "protobuf" in str(error)


def test_inconsistent_feature_count() -> None:
    first = write(recordio.write_dense, *dense_data(3, 5))
    second = write(recordio.write_dense, *dense_data(2, 6))
    error = read_error(first + second)
    assert (error.record_index, error.offset) == (3, len(first)) and "feature count" in str(error)
    sparse = write(recordio.write_sparse, sparse_data(4, 100, 0.1))
    sparse += write(recordio.write_sparse, sparse_data(1, 99, 0.1))
    error = read_error(sparse)
    assert error.record_index == 4 and "feature count" in str(error)
    with pytest.raises(RecordIOError, match="feature count") as caught:
        list(recordio.iter_batches(io.BytesIO(first + second), 3))
    assert caught.value.record_index == 3


def test_mixed_labels_and_mixed_dense_sparse_are_errors() -> None:
    X, y = dense_data(2, 5)
    error = read_error(write(recordio.write_dense, X, y) + write(recordio.write_dense, X))
    assert error.record_index == 2 and "label" in str(error)
    sparse = write(recordio.write_sparse, scipy.sparse.csr_matrix(X))
    error = read_error(write(recordio.write_dense, X) + sparse)
    assert error.record_index == 2 and "sparse" in str(error)


def test_bad_continuation_sequences(record_protobuf: ModuleType) -> None:
    payload = payloads(write(recordio.write_dense, *dense_data(1, 4)))[0]
    whole = frame(payload)
    part = MAGIC_BYTES + struct.pack("<I", (2 << 29) | 4) + payload[:4]
    error = read_error(whole + part)
    assert error.record_index == 1 and error.offset == len(whole) and "continuation" in str(error)
    start = MAGIC_BYTES + struct.pack("<I", (1 << 29) | 4) + payload[:4]
    error = read_error(start + whole)
    assert error.record_index == 0 and "flag 0" in str(error)
    error = read_error(whole + start)
    assert error.record_index == 1 and "truncated" in str(error)
    error = read_error(MAGIC_BYTES + struct.pack("<I", (5 << 29) | 4) + payload[:4])
    assert "flag 5" in str(error)


def test_writer_rejects_bad_arrays() -> None:
    out = io.BytesIO()
    with pytest.raises(TypeError, match="float32 or float64"):
        recordio.write_dense(out, np.ones((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="2-D"):
        recordio.write_dense(out, np.ones(3, dtype=np.float32))
    with pytest.raises(ValueError, match="one per row"):
        recordio.write_dense(out, np.ones((2, 2), dtype=np.float32), np.ones(3))
    with pytest.raises(TypeError, match="numeric"):
        recordio.write_dense(out, np.ones((1, 2), dtype=np.float32), np.array(["a"]))
    X = np.ones((4, 3), dtype=np.float32)
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="row 2, column 1"):
        recordio.write_dense(out, X)
    with pytest.raises(ValueError, match="labels .* row 1"):
        recordio.write_dense(out, np.ones((2, 2), np.float32), np.array([0.0, np.inf]))
    with pytest.raises(TypeError, match="scipy.sparse"):
        recordio.write_sparse(out, np.ones((2, 2), dtype=np.float32))
    S = scipy.sparse.csr_matrix(np.array([[0, 1], [np.nan, 0]], dtype=np.float32))
    with pytest.raises(ValueError, match="row 1"):
        recordio.write_sparse(out, S)


def test_threaded_batches_come_back_in_order_and_stop_at_the_first_error() -> None:
    from containerlib.recordio.writer import _in_order_threaded

    def work(start: int, stop: int) -> np.ndarray:
        if start == 30:
            raise ValueError(f"row {start}: bad")
        return np.arange(start, stop)

    batches = [(i, i + 10) for i in range(0, 30, 10)]
    assert np.array_equal(np.concatenate(list(_in_order_threaded(work, batches))), np.arange(30))
    seen = []
    with pytest.raises(ValueError, match="row 30"):
        for out in _in_order_threaded(work, [*batches, (30, 40), (40, 50)]):
            seen.append(out)
    assert np.array_equal(np.concatenate(seen), np.arange(30)), "nothing after the failing batch is yielded"

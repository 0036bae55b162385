"""The smoke test's pieces on real bytes: test records cut from RecordIO shards (split records kept whole, damaged
framing named), batch transform's answers paired with them, answers compared (label names accepted), metrics."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest

from containerlib.recordio import MAGIC, read, write_dense
from pipeline.core.smoke import (
    SmokeError,
    case_from_shards,
    compare_answers,
    parse_answers,
    quality,
    take_records,
)


def shard(rows: int, first: int = 0) -> bytes:
    buffer = io.BytesIO()
    features = np.arange(first * 3, (first + rows) * 3, dtype=np.float32).reshape(rows, 3)
    write_dense(buffer, features, (np.arange(first, first + rows) % 2).astype(np.float32))
    return buffer.getvalue()


def answers(scores: list[float]) -> bytes:
    return "".join(json.dumps({"score": s, "predicted_label": int(s > 0.5)}) + "\n" for s in scores).encode()


def test_take_records_cuts_whole_records_and_reads_back() -> None:
    data = shard(5)
    cut, taken = take_records(data, 3)
    features, labels = read(io.BytesIO(cut))
    assert taken == 3 and features.shape == (3, 3) and labels.tolist() == [0, 1, 0]
    assert take_records(data, 99) == (data, 5)


def test_a_split_record_is_taken_whole() -> None:
    """Frames with continuation flags 1 (first) and 3 (last) are one record (their payloads are arbitrary here)."""
    whole, _ = take_records(shard(1), 1)
    payload = whole[8 : 8 + (struct.unpack_from("<I", whole, 4)[0] & ((1 << 29) - 1))]
    half = len(payload) // 2 // 4 * 4
    frames = b"".join(
        struct.pack("<II", MAGIC, len(part) | flag << 29) + part + b"\0" * (-len(part) % 4)
        for part, flag in ((payload[:half], 1), (payload[half:], 3))
    )
    data = frames + shard(1, first=1)
    cut, taken = take_records(data, 1)
    assert (cut, taken) == (frames, 1)  # both frames of the first record (flags 1 then 3), none of the next one


def test_damaged_framing_names_the_shard_and_offset() -> None:
    data = shard(3)
    with pytest.raises(SmokeError, match=r"s3://b/test/part-1: record 2 at byte offset \d+ is truncated"):
        take_records(data[:-4], 3, "s3://b/test/part-1")
    with pytest.raises(SmokeError, match="part-1: no RecordIO magic number at byte offset 0"):
        take_records(b"\0" * 16, 1, "part-1")


def test_a_case_takes_rows_across_shards_and_reads_no_more_than_it_needs() -> None:
    read_pairs: list[str] = []

    def pairs():
        for index, (rows, first) in enumerate(((2, 0), (3, 2), (4, 5))):
            read_pairs.append(f"part-{index}")
            yield (
                f"part-{index}",
                shard(rows, first),
                f"part-{index}.out",
                answers([0.1 * (first + i) for i in range(rows)]),
            )

    case = case_from_shards(pairs(), 4)
    assert read_pairs == ["part-0", "part-1"] and case.sources == ("part-0", "part-1")
    assert case.rows == 4 and case.labels == (0.0, 1.0, 0.0, 1.0)
    assert [answer["score"] for answer in case.expected] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert read(io.BytesIO(case.body))[0].shape == (4, 3)


def test_answers_that_do_not_cover_the_records_are_an_error_naming_the_file() -> None:
    with pytest.raises(SmokeError, match="part-0.out: 1 answer\\(s\\) for 2 record\\(s\\) of its shard"):
        case_from_shards([("part-0", shard(2), "part-0.out", answers([0.2]))], 2)
    with pytest.raises(SmokeError, match="part-0.out: line 1: not valid JSON"):
        case_from_shards([("part-0", shard(1), "part-0.out", b"{nope\n")], 1)
    with pytest.raises(SmokeError, match="holds no records"):
        case_from_shards([], 3)


def test_parse_answers_takes_both_of_linear_learners_response_forms() -> None:
    lines = answers([0.25, 0.75])
    wrapped = json.dumps({"predictions": [json.loads(line) for line in lines.splitlines()]}).encode()
    assert (
        parse_answers(lines)
        == parse_answers(wrapped)
        == [
            {"score": 0.25, "predicted_label": 0},
            {"score": 0.75, "predicted_label": 1},
        ]
    )
    with pytest.raises(SmokeError, match="answer line 1: not JSON"):
        parse_answers(b"<html>502 Bad Gateway</html>")


def test_compare_answers_accepts_label_names_and_names_the_rows_that_differ() -> None:
    expected = [{"score": 0.2, "predicted_label": 0}, {"score": 0.9, "predicted_label": 1}]
    named = [{"score": 0.2, "predicted_label": "No"}, {"score": 0.9 + 1e-9, "predicted_label": "Yes"}]
    assert compare_answers(expected, named, ["No", "Yes"]).passed
    unnamed = compare_answers(expected, named)  # without the label values a name cannot be checked
    assert not unnamed.passed and unnamed.mismatches[0] == "row 0: predicted_label 'No', expected 0"
    off = compare_answers(expected, [{"score": 0.2, "predicted_label": 0}, {"score": 0.8, "predicted_label": 1}])
    assert off.mismatch_count == 1 and off.mismatches == ("row 1: score 0.8, expected 0.9",)
    short = compare_answers(expected, expected[:1])
    assert not short.passed and short.mismatches[0] == "1 answers for 2 rows"
    multiclass = [{"score": [0.1, 0.7, 0.2], "predicted_label": 1}]
    assert compare_answers(multiclass, [{"score": [0.1, 0.7, 0.2], "predicted_label": "b"}], ["a", "b", "c"]).passed


def test_quality_is_measured_from_scores_for_each_predictor_type() -> None:
    binary = [{"score": s, "predicted_label": int(s > 0.5)} for s in (0.1, 0.4, 0.35, 0.8)]
    assert quality(binary, [0, 0, 1, 1]) == ("auc", 0.75)  # sklearn's roc_auc_score gives 0.75 too
    tied = [{"score": 0.5, "predicted_label": 0}] * 4
    assert quality(tied, [0, 1, 0, 1]) == ("auc", 0.5)
    assert quality(binary, [1, 1, 1, 1]) is None  # one class: AUC is undefined
    multiclass = [{"score": [0.1, 0.7, 0.2]}, {"score": [0.6, 0.3, 0.1]}]
    assert quality(multiclass, [1, 2]) == ("accuracy", 0.5)
    regression = [{"score": 1.0}, {"score": 2.0}, {"score": 2.0}]
    assert quality(regression, [1.0, 2.0, 3.0]) == ("r2", 0.5)
    assert quality(regression, [1.0, 1.0]) is None  # a different count of answers and labels

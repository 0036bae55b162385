"""Linear Learner's response objects (``containerlib.linear_learner.responses``): built once per predictor type, the
JSON lines batch transform writes equal to the objects the endpoint answers, and read back with the field named."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from containerlib.linear_learner.responses import (
    ResponseError,
    parse_response,
    parse_response_body,
    response_body,
    response_lines,
    response_object,
    responses,
)

SCORED = {
    "binary_classifier": (np.array([0.25, 0.75], np.float32), np.array([0, 1])),
    "multiclass_classifier": (np.array([[0.5, 0.25, 0.25], [0.125, 0.125, 0.75]], np.float32), np.array([0, 2])),
    "regressor": (np.array([1.5, -2.25], np.float32), None),
}
EXPECTED = {
    "binary_classifier": [{"score": 0.25, "predicted_label": 0}, {"score": 0.75, "predicted_label": 1}],
    "multiclass_classifier": [
        {"score": [0.5, 0.25, 0.25], "predicted_label": 0},
        {"score": [0.125, 0.125, 0.75], "predicted_label": 2},
    ],
    "regressor": [{"score": 1.5}, {"score": -2.25}],
}


@pytest.mark.parametrize("predictor_type", sorted(SCORED))
def test_the_objects_the_lines_and_their_reading_agree_per_predictor_type(predictor_type: str) -> None:
    score, label = SCORED[predictor_type]
    objects = responses(predictor_type, score, label)
    lines = response_lines(predictor_type, score, label)
    assert objects == EXPECTED[predictor_type]
    assert lines == [json.dumps(item) for item in objects]  # the fast formatter writes what json.dumps writes
    parsed = [parse_response(response_object(line), predictor_type) for line in lines]
    assert parsed == [(item["score"], item.get("predicted_label")) for item in objects]


def test_a_float32_score_keeps_its_exact_value_through_json() -> None:
    score = np.array([1 / 3], np.float32)
    (line,) = response_lines("regressor", score, None)
    assert np.float32(json.loads(line)["score"]) == score[0] and line == f'{{"score": {float(score[0])!r}}}'


def test_a_non_finite_score_is_an_error_naming_it() -> None:
    with pytest.raises(ResponseError, match="the model produced a non-finite score"):
        response_lines("regressor", np.array([np.inf], np.float32), None)


@pytest.mark.parametrize(
    ("record", "predictor_type", "message"),
    [
        ({"score": 0.5}, "binary_classifier", "expected a 'predicted_label' field"),
        ({"score": 1.5, "predicted_label": 1}, "binary_classifier", "'score' is 1.5, expected a probability"),
        ({"score": 0.5, "predicted_label": 2}, "binary_classifier", "'predicted_label' is 2, expected an integer in"),
        ({"score": "x"}, "regressor", "'score' is 'x', expected a finite number"),
        ({"score": 0.5, "predicted_label": 0}, "multiclass_classifier", "expected a list of class probabilities"),
    ],
)
def test_a_response_of_the_wrong_form_is_named(record: dict, predictor_type: str, message: str) -> None:
    with pytest.raises(ResponseError, match=message):
        parse_response(record, predictor_type)


def test_a_binary_margin_is_read_when_the_loss_gives_margins() -> None:
    assert parse_response({"score": -3.5, "predicted_label": 0}, "binary_classifier", margin=True) == (-3.5, 0)


@pytest.mark.parametrize(
    ("line", "message"), [("{", "not valid JSON"), ("[1]", "expected an object with a 'score' field")]
)
def test_a_line_that_is_not_a_response_object_is_named(line: str, message: str) -> None:
    with pytest.raises(ResponseError, match=message):
        response_object(line)


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [(None, "application/json"), ("*/*", "application/json"), ("application/x-ndjson", "application/jsonlines")],
)
def test_a_body_is_written_for_the_accept_type_and_read_back(accept: str | None, content_type: str) -> None:
    items = EXPECTED["binary_classifier"]
    body, kind = response_body(items, accept)
    assert kind == content_type and parse_response_body(body, kind) == items


def test_an_accept_type_that_is_not_a_response_type_gets_no_body() -> None:
    assert response_body(EXPECTED["regressor"], "text/csv") is None
    with pytest.raises(ResponseError, match="a response is application/json or application/jsonlines, not 'text/csv'"):
        parse_response_body(b"1\n", "text/csv")


@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (b'{"score": 0.5, "predicted_label": 1}\n', "application/x-ndjson", 200, None),
        (b'{"predictions": [{"score": 0.5, "predicted_label": 1}]}', "application/json; charset=utf-8", 200, None),
        (b'{"score": 0.5}', "application/json", 400, 'an application/json response is {"predictions": [objects]}'),
        (b"{", "application/jsonlines", 400, "Linear Learner's response cannot be read: Expecting property name"),
        (b"1,2", "text/csv", 415, "the labels container reads application/json or application/jsonlines, not"),
    ],
)
def test_the_labels_container_reads_linear_learners_response_or_answers_its_4xx(
    body: bytes, content_type: str, status: int, message: str | None
) -> None:
    """The last container of the inference pipeline reads Linear Learner's answer with the same reader; a body it
    cannot read is a request error with its status, not a server error."""
    from serving import RequestError
    from serving.labels import parse_predictions

    if message is None:
        assert parse_predictions(body, content_type) == [{"score": 0.5, "predicted_label": 1}]
        return
    with pytest.raises(RequestError, match=re.escape(message)) as raised:
        parse_predictions(body, content_type)
    assert raised.value.status == status

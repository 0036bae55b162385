"""A user-given ``SchemaUrl`` checked as Preprocess will read it, before anything runs, on either backend.

Preprocess's ``schema`` input downloads the object at ``SchemaUrl`` (or every object under it, as a prefix) and needs
exactly one ``.json`` there: an llpipe schema decided for this run's label column, predictor type and columns. Found
only in Preprocess's log, a wrong URL fails minutes into a run; the local runner reads its S3 folder and
``llpipe start``/``schedule`` read S3 (ListObjectsV2, GetObject), and both refuse here with one message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from containerlib.schema_document import document_problem, run_mismatch
from pipeline.core.errors import ParameterError

WAY_OUT = (
    "leave SchemaUrl unset to infer the schema from the data, or give the s3:// URI of a schema a run of this table "
    "decided (<pipeline>/schemas/<sha256>.json, named in the run's 'schema:' line)"
)
MAX_BYTES = 16 * 1024 * 1024  # a schema is kilobytes; more is not one of ours, and is not read whole


def refusal(uri: str, problem: str) -> ParameterError:
    """The error naming ``SchemaUrl``, its value, the problem and the ways out."""
    return ParameterError(f"{problem}; {WAY_OUT}", option="SchemaUrl", value=uri)


def check_schema_objects(
    uri: str,
    found: Sequence[str],
    read_text: Callable[[str], str],
    label_column: str,
    predictor_type: str,
    columns: list[str] | None,
    where: str,
) -> None:
    """Refuse ``uri`` unless ``found`` (the ``.json`` objects Preprocess would receive from it) is exactly one, whose
    text (``read_text(name)``) is an llpipe schema for this label column, predictor type and (when known) input
    ``columns``. ``where`` says where nothing was found (the local S3 folder, or S3)."""
    if not found:
        raise refusal(uri, f"no object there {where}")
    if len(found) > 1:
        raise refusal(uri, f"the prefix holds {len(found)} .json objects, Preprocess needs exactly one")
    try:
        decided = json.loads(read_text(found[0]))
    except (OSError, ValueError) as error:
        raise refusal(uri, f"not a readable JSON file ({error})") from None
    problem = document_problem(decided) or run_mismatch(decided, label_column, predictor_type, columns)
    if problem is not None:
        raise refusal(uri, problem)

"""The test rows' id lines as Preprocess writes them (containerlib.row_ids.RowIds): the lines of ``row_ids``, in the
order asked for, whether the ids are an id column's values or a file's data rows."""

from __future__ import annotations

import json

import numpy as np

from containerlib.row_ids import RowIds, row_ids


def test_a_files_rows_give_row_ids_lines_in_the_order_asked() -> None:
    rows = np.array([3, 17, 4, 1_000_001])
    order = np.array([2, 0, 3, 1])
    ids = RowIds(file='in/a "quoted" name.csv', rows=rows)
    expected = row_ids(None, 'in/a "quoted" name.csv', rows[order].tolist())
    assert ids.lines(order) == "\n".join(expected) + "\n"
    assert [json.loads(line) for line in ids.lines(order).splitlines()][0] == {
        "file": 'in/a "quoted" name.csv',
        "row": 4,
    }
    assert len(ids) == 4


def test_an_id_columns_values_give_row_ids_lines_in_the_order_asked() -> None:
    values = ["b-2", "a,1", 'c"3', "é"]
    order = np.array([3, 1, 0, 2])
    ids = RowIds(values)
    assert ids.lines(order) == "\n".join(row_ids([values[i] for i in order])) + "\n"
    assert len(ids) == 4


def test_no_rows_give_no_lines() -> None:
    assert RowIds(file="a.csv", rows=np.array([], dtype=np.int64)).lines(np.array([], dtype=np.int64)) == ""
    assert len(RowIds()) == 0

"""The suite's own dealing under xdist (``tests/conftest.py``'s ``dealing_order``): every collected test is dealt
exactly once, a grouped module as one unit, the costliest units first by recorded (or typical) seconds, and the single
tests of one module next to each other."""

from __future__ import annotations

from conftest import dealing_order

COLLECTION = [
    "tests/unit/core/test_x.py::test_one",
    "tests/integration/test_api.py::test_a",
    "tests/unit/core/test_x.py::test_two",
    "tests/integration/test_api.py::test_b",
    "tests/integration/test_slow.py::test_only",
    "tests/contract/test_definition.py::test_d",
]


def scope_of(nodeid: str) -> str:
    """test_api grouped (as GROUPED_MODULES' modules are), any other test a unit of its own."""
    module = nodeid.split("::", 1)[0]
    return module if module.endswith("test_api.py") else nodeid


def test_every_test_is_dealt_once_the_costliest_first() -> None:
    order = dealing_order(COLLECTION, scope_of, {"tests/integration/test_slow.py::test_only": 30.0})
    dealt = [nodeid for _, nodeids in order for nodeid in nodeids]
    assert sorted(dealt) == sorted(COLLECTION)
    assert order == [
        ("tests/integration/test_slow.py::test_only", ["tests/integration/test_slow.py::test_only"]),  # 30 s recorded
        (
            "tests/integration/test_api.py",
            ["tests/integration/test_api.py::test_a", "tests/integration/test_api.py::test_b"],
        ),
        ("tests/contract/test_definition.py::test_d", ["tests/contract/test_definition.py::test_d"]),  # 0.3 typical
        ("tests/unit/core/test_x.py::test_one", ["tests/unit/core/test_x.py::test_one"]),  # 2 x 0.1, together
        ("tests/unit/core/test_x.py::test_two", ["tests/unit/core/test_x.py::test_two"]),
    ]


def test_a_recorded_figure_moves_a_unit_ahead() -> None:
    recorded = {"tests/unit/core/test_x.py::test_two": 9.0}
    order = [scope for scope, _ in dealing_order(COLLECTION, scope_of, recorded)]
    assert order[:2] == ["tests/unit/core/test_x.py::test_one", "tests/unit/core/test_x.py::test_two"]

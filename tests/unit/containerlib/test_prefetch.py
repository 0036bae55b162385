"""The job's pipelining: items mapped on several threads come back in order, errors in their turn, and closing early
leaves no thread behind."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator

import pytest

from containerlib.prefetch import InFlight, mapped_in_order

WAIT = 60  # seconds: a bound on waiting for a state, only reached if the code under test is broken


def _threads(prefix: str) -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith(prefix)]


def test_items_are_mapped_at_once_and_yielded_in_their_order() -> None:
    second_done = threading.Event()

    def square(item: int) -> int:
        if item == 0:  # finishes only after item 1 has: the two are mapped at the same time
            assert second_done.wait(WAIT), "item 1 was not mapped while item 0 was"
        if item == 1:
            second_done.set()
        return item * item

    assert list(mapped_in_order(square, iter(range(7)))) == [0, 1, 4, 9, 16, 25, 36]


@pytest.mark.parametrize("workers", [1, 2])
def test_an_error_of_the_function_comes_after_the_results_before_it(workers: int) -> None:
    def check(item: int) -> int:
        if item == 2:
            raise ValueError("item 2 is bad")
        return item

    results = mapped_in_order(check, iter(range(6)), workers)
    assert [next(results), next(results)] == [0, 1]
    with pytest.raises(ValueError, match="item 2 is bad"):
        next(results)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_error_of_the_items_comes_after_the_results_of_the_items_before_it(workers: int) -> None:
    def items() -> Iterator[int]:
        yield from range(3)
        raise OSError("unreadable after item 2")

    results = mapped_in_order(lambda item: item, items(), workers)
    assert [next(results), next(results), next(results)] == [0, 1, 2]
    with pytest.raises(OSError, match="unreadable after item 2"):
        next(results)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_earlier_item_s_error_wins_over_a_later_failure_of_the_items(workers: int) -> None:
    def items() -> Iterator[int]:
        yield from range(2)
        raise OSError("unreadable after item 1")

    def check(item: int) -> int:
        if item == 0:
            raise ValueError("item 0 is bad")
        return item

    with pytest.raises(ValueError, match="item 0 is bad"):
        list(mapped_in_order(check, items(), workers))


@pytest.mark.parametrize("workers", [1, 2])
def test_closing_early_ends_every_thread_and_maps_no_more(workers: int) -> None:
    mapped: list[int] = []

    def record(item: int) -> int:
        mapped.append(item)
        return item

    before = set(_threads("map")) | set(_threads("prefetch"))
    results = mapped_in_order(record, itertools.count(), workers)  # endless: only closing can stop it
    assert next(results) == 0
    results.close()
    assert set(_threads("map")) | set(_threads("prefetch")) == before
    assert max(mapped) <= 3, f"mapped items {sorted(mapped)} for one taken"  # the one taken and a few ahead at most


@pytest.mark.parametrize("workers", [1, 2])
def test_in_flight_hands_on_no_more_items_than_its_limit_until_one_is_left(workers: int) -> None:
    made: list[int] = []

    def items() -> Iterator[int]:
        for item in itertools.count():
            made.append(item)
            yield item

    before = set(_threads("map")) | set(_threads("prefetch"))
    limit = workers + 1  # the least mapped_in_order works with: it takes one more item than its workers to yield one
    in_flight = InFlight(limit)
    with in_flight:
        results = mapped_in_order(lambda item: item, in_flight.entered(items()), workers)
        assert next(results) == 0  # not left: the producer hands on `limit` items, makes one more and waits
        assert _holds_within_wait(lambda: made == list(range(limit + 1)))
        assert in_flight.count == limit
        in_flight.leave()  # room for one more: handed on, and the next made and held
        assert _holds_within_wait(lambda: made == list(range(limit + 2)))
        assert in_flight.count == limit and in_flight.most == limit
    results.close()  # after the producer's wait was closed: every thread ends
    assert set(_threads("map")) | set(_threads("prefetch")) == before
    assert made == list(range(limit + 2))


def _holds_within_wait(condition: Callable[[], bool]) -> bool:
    """Whether ``condition`` comes to hold (checked every millisecond) before WAIT seconds, a bound only reached if
    the code under test is broken."""
    gave_up = threading.Event()
    timer = threading.Timer(WAIT, gave_up.set)
    timer.start()
    try:
        while not condition():
            if gave_up.wait(0.001):
                return False
        return True
    finally:
        timer.cancel()

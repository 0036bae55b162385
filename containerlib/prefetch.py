"""Items produced on a background thread, a few in advance, and mapped on a few threads in order, so the stages of a
job overlap."""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def prefetched(items: Iterator[Any], ahead: int = 2) -> Iterator[Any]:
    """``items`` produced on a background thread, up to ``ahead`` in advance, so stages overlap: the next chunk is
    parsed (Arrow and pandas' parser release the GIL) while one is converted (numpy does too) and another dealt to
    shards. Errors reach the caller in order."""
    produced: queue.Queue[Any] = queue.Queue(maxsize=ahead)
    stop = threading.Event()
    end = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                produced.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
                del item  # not held while the next is produced: the consumer may be done with it by then
            put((end, None))
        except BaseException as error:  # noqa: BLE001 - handed to the consuming thread
            put((None, error))
        finally:
            close = getattr(items, "close", None)
            if close:  # a generator that is itself prefetched stops its own thread now, on this one
                close()

    worker = threading.Thread(target=produce, name="prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item, error = produced.get()
            if error is not None:
                raise error
            if item is end:
                return
            yield item
            del item  # not held while waiting for the next: the caller is done with it
    finally:
        stop.set()
        worker.join()


def mapped_in_order(function: Callable[[Any], Any], items: Iterator[Any], workers: int = 2) -> Iterator[Any]:
    """``function`` of each item, computed on ``workers`` threads at once (numpy and Arrow release the GIL) and
    yielded in the items' order; the items are produced on a thread of their own (:func:`prefetched`), or with one
    worker on that same thread. Errors reach the caller in order: one raised by ``items`` after the results of the
    items before it. When the caller stops early, work not yet started is dropped and every thread has ended once
    the generator is closed."""
    if workers == 1:  # one thread reads and maps: no pool to hand each item to (measured faster for CSV)
        yield from prefetched(map(function, items))
        return
    pending: deque[Future[Any]] = deque()
    source = prefetched(items)
    failure: Exception | None = None  # raised by the items: raised in its turn, after the results before it
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="map") as pool:
        try:
            while True:
                try:
                    item = next(source)
                except StopIteration:
                    break
                except Exception as error:  # noqa: BLE001 - raised to the caller below, in order
                    failure = error
                    break
                pending.append(pool.submit(function, item))
                del item  # held by its task until mapped, not by this frame while the results are awaited
                if len(pending) > workers:  # at most this many computed ahead of the caller
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
            if failure is not None:
                raise failure
        finally:
            for future in pending:
                future.cancel()
            source.close()


class InFlightClosed(Exception):
    """Raised in a producer waiting on a closed :class:`InFlight`: the pipeline was stopped."""


class InFlight:
    """At most ``limit`` items in flight between a pipeline's first stage and its last, whatever the queues between
    them: the producer calls :meth:`entered` items (waiting, before it hands one on, while ``limit`` are in flight),
    and the last stage calls :meth:`leave` once done with each, having dropped its references. So the pipeline holds
    at most ``limit`` items plus the one the producer has made and waits to hand on, an explicit bound on its memory.
    :meth:`close` (also on leaving a ``with`` block) wakes a waiting producer with InFlightClosed, so a pipeline
    stopped early can end its threads: close it before joining them."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"at least one item must be in flight, not {limit}")
        self.limit = limit
        self.count = 0
        self.most = 0  # the most items that were in flight at once
        self._closed = False
        self._changed = threading.Condition()

    def entered(self, items: Iterator[Any]) -> Iterator[Any]:
        """``items``, each once there is room for it in flight; ``items`` is closed when this is."""
        try:
            for item in items:
                with self._changed:
                    while self.count >= self.limit and not self._closed:
                        self._changed.wait()
                    if self._closed:
                        raise InFlightClosed("the pipeline was stopped")
                    self.count += 1
                    self.most = max(self.most, self.count)
                yield item
                del item  # not held while the next is made
        finally:
            close = getattr(items, "close", None)
            if close:
                close()

    def leave(self) -> None:
        """One item is done with: room for the next."""
        with self._changed:
            self.count -= 1
            self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def __enter__(self) -> InFlight:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

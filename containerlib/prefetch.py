"""Items produced on a background thread, a few in advance, so the stages of a job overlap."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
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
    finally:
        stop.set()
        worker.join()

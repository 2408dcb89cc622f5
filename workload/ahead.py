"""Run an iterator in a child process, ahead of its consumer, on the machine's second core.

``lk produce`` generates large workloads in a child process so generation overlaps the
producer's sends (``workload.generator.generate_ahead``); ``lk replay`` reads, checks
and encodes a file the same way, so the two are compared like for like. The child
pickles chunks of items into a pipe; a thread of the caller moves them into a bounded
queue (memory stays bounded); the items arrive in order. When the iterator is done the
child sends its summary (``finish()``), which the caller gets through ``on_done``. An
exception in the child is raised in the caller: the same exception when it pickles.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import pickle
import queue
import threading
import traceback
from collections.abc import Callable, Generator, Iterator
from contextlib import suppress
from itertools import islice
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

_ITEMS, _DONE, _ERROR, _FAILED = b"I", b"D", b"E", b"F"
_PIPE_BYTES = 1 << 20
#: ``factory(*args) -> (items, finish)``: the iterator, and what to report when it ends.
Factory = Callable[..., tuple[Iterator[Any], Callable[[], Any]]]


def iterate_ahead(
    factory: Factory,
    args: tuple,
    on_done: Callable[[Any], None],
    *,
    chunk: int = 1_000,
    depth: int = 64,
) -> Generator[Any]:
    """The items of ``factory(*args)``, computed in a child process started now."""
    methods = multiprocessing.get_all_start_methods()
    context: ForkContext | SpawnContext = (
        multiprocessing.get_context("fork")
        if "fork" in methods
        else multiprocessing.get_context("spawn")
    )
    receiver, sender = context.Pipe(duplex=False)
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with suppress(OSError):
            fcntl.fcntl(sender.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    process = context.Process(
        target=_child, args=(factory, args, sender, chunk), name="lk-ahead", daemon=True
    )
    process.start()
    sender.close()
    return _drain(process, receiver, depth, on_done)


def _child(factory: Factory, args: tuple, pipe: Connection, chunk: int) -> None:
    send = pipe.send_bytes
    try:
        items, finish = factory(*args)
        count = 0
        while batch := list(islice(items, chunk)):
            send(_ITEMS + pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
            count += len(batch)
        send(_DONE + pickle.dumps((count, finish()), protocol=pickle.HIGHEST_PROTOCOL))
    except Exception as error:
        try:
            send(_ERROR + pickle.dumps(error))
        except Exception:
            send(_FAILED + traceback.format_exc().encode())
        raise SystemExit(1) from None
    finally:
        pipe.close()


def _drain(
    process: BaseProcess, pipe: Connection, depth: int, on_done: Callable[[Any], None]
) -> Generator[Any]:
    chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(message: bytes | None) -> None:
        while not stop.is_set():
            with suppress(queue.Full):
                chunks.put(message, timeout=0.2)
                return

    def read() -> None:
        try:
            while not stop.is_set():
                message = pipe.recv_bytes()
                offer(message)
                if not message.startswith(_ITEMS):
                    return
        except BaseException:  # EOF: the child is gone; the consumer reports it
            pass
        offer(None)

    reader = threading.Thread(target=read, name="lk-ahead-reader", daemon=True)
    reader.start()
    received = 0
    try:
        while (message := chunks.get()) is not None:
            tag, body = message[:1], memoryview(message)[1:]
            if tag == _ITEMS:
                batch = pickle.loads(body)
                received += len(batch)
                yield from batch
            elif tag == _DONE:
                count, summary = pickle.loads(body)
                if count != received:
                    raise RuntimeError(f"the child sent {count} items, {received} arrived")
                process.join(timeout=10)
                on_done(summary)
                return
            elif tag == _ERROR:
                raise pickle.loads(body)
            else:
                raise RuntimeError(f"the child process failed:\n{bytes(body).decode()}")
        process.join(timeout=10)
        raise RuntimeError(f"the child process died (exit code {process.exitcode})")
    finally:
        stop.set()
        if process.is_alive():
            process.terminate()
            process.join(timeout=2)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        reader.join(timeout=10)
        pipe.close()

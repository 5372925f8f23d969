"""One side of the conversation between the judge and the runner (:mod:`course_grader.protocol`):
it sends requests, waits for their replies and serves the other side's requests meanwhile."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from course_grader.plain_data import Codec, checked_list
from course_grader.protocol import (
    BUILTIN_ERRORS,
    MAX_DEPTH,
    MAX_MESSAGE,
    MAX_VALUES,
    ChannelClosed,
    ProtocolError,
    clip,
    rebuild_error,
)

Handler = Callable[[dict], Any]


class Endpoint:
    """One side of the conversation: send requests, wait for replies, serve the other side's
    requests that arrive meanwhile (with ``serve``)."""

    def __init__(self, read_fd: int, write_fd: int, codec: Codec, serve: Handler, in_turn: bool = False):
        self.reader = os.fdopen(read_fd, "rb", buffering=65536)
        self.writer = os.fdopen(write_fd, "wb", buffering=0)
        self.codec = codec
        self.serve = serve
        self.counter = 0  # requests sent
        self.served = 0
        self.debug = False  # print the tracebacks of failed requests (on stderr)
        # ``in_turn``: processes forked on this side (a process pool's workers calling the other
        # side's functions) share the pipes, where two would read each other's replies. One at a
        # time waits for a reply: it holds a lock (POSIX: per process) on the pipe it writes to.
        # The process that made the channel lets it go while its own code serves the other side
        # meanwhile (that code's workers may ask too, and it waits for them); a forked copy keeps
        # it: a sibling's request taken meanwhile nested above its own on the other side, which
        # then got a reply out of turn (ps02's gradient, one pass per worker, each calling back).
        self.in_turn = in_turn
        self.turn = {"pid": 0, "depth": 0}  # this process's requests under way
        self.maker = os.getpid()

    def send(self, message: dict) -> None:
        self.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def write(self, data: bytes) -> None:
        try:
            self.writer.write(data)
        except (BrokenPipeError, OSError) as error:
            raise ChannelClosed(str(error)) from None

    def receive(self) -> dict:
        line = self.reader.readline(MAX_MESSAGE + 1)
        if not line:
            raise ChannelClosed("the other side closed the channel")
        if len(line) > MAX_MESSAGE or not line.endswith(b"\n"):
            raise ProtocolError(f"a message longer than {MAX_MESSAGE} bytes")
        if too_large(line):
            raise ProtocolError(f"a message of more than {MAX_VALUES:,} values")
        try:
            message = _parsed(line)
        except (ValueError, RecursionError):
            raise ProtocolError("a message that is not JSON") from None
        except MemoryError:
            raise ProtocolError("a message too large to read in the grader's memory") from None
        if type(message) is not dict:
            raise ProtocolError("a message that is not a JSON object")
        return message

    def request(self, op: str, write_back: list | None = None, **fields: Any) -> Any:
        """Ask the other side to do ``op``; serve its own requests until the reply comes.

        ``write_back``: the writeable arrays the request's arguments hold (``Codec.arrays``),
        which get what the other side's code wrote into its copies of them, as a call in one
        process would leave them."""
        self._hold()
        try:
            self.counter += 1
            number = self.counter
            if self.codec.unused:
                fields["free"], self.codec.unused = self.codec.unused, []
            self.send({"id": number, "op": op, **fields})
            while True:
                message = self.receive()
                if "op" in message:
                    self.answer(message)
                    continue
                if message.get("re") != number:
                    raise ProtocolError("a reply to a request that was not asked")
                if "error" in message:
                    error = message["error"]
                    if type(error) is not dict:
                        raise ProtocolError("a malformed error")
                    kind, text = clip(str(error.get("type", "Error")), 100), clip(str(error.get("message", "")))
                    # The other side's own words, noted by the codec as such (decoded): a test's
                    # message that quotes the error (f"...: {error}") shows a student's as
                    # <your text> where texts are withheld; a builtin exception's name is Python's.
                    kind = kind if kind in BUILTIN_ERRORS else self.codec.decode(kind)
                    raise rebuild_error(kind, self.codec.decode(text))
                if write_back and type(message.get("changed")) is list:
                    self._write_back(write_back, message["changed"])
                return self.codec.decode(message.get("value"))
        finally:
            self._let_go()

    def _hold(self) -> None:
        if not self.in_turn:
            return
        if self.turn["pid"] != os.getpid():  # a forked copy holds nothing its parent held
            self.turn.update(pid=os.getpid(), depth=0)
        if self.turn["depth"] == 0:
            fcntl.lockf(self.writer.fileno(), fcntl.LOCK_EX)
        self.turn["depth"] += 1

    def _let_go(self) -> None:
        if not self.in_turn:
            return
        self.turn["depth"] -= 1
        if self.turn["depth"] == 0:
            fcntl.lockf(self.writer.fileno(), fcntl.LOCK_UN)

    def _serve_in_turn(self, message: dict) -> Any:
        """``serve(message)``, with the channel let go while it runs in the process that made it
        (not in a forked copy), held again for the reply."""
        held = self.turn["depth"] if self.in_turn and self.turn["pid"] == os.getpid() == self.maker else 0
        if held:
            self.turn["depth"] = 1
            self._let_go()
        try:
            return self.serve(message)
        finally:
            if held:
                self._hold()
                self.turn["depth"] = held

    def _write_back(self, arrays: list, changed: list) -> None:
        for entry in changed:
            index, data = checked_list(entry)
            new = self.codec.decode(data)
            if type(index) is int and 0 <= index < len(arrays) and type(new) is np.ndarray:
                if new.shape == arrays[index].shape:
                    np.copyto(arrays[index], new, casting="unsafe")

    def answer(self, message: dict) -> None:
        """Serve one request of the other side and send the reply."""
        number = message.get("id")
        self.served += 1
        if "free" in message:
            self.codec.forget(message["free"])
        try:
            result = self._serve_in_turn(message)
            if result is ANSWERED:
                return
            changed = []
            if isinstance(result, InPlace):
                result, changed = result.value, result.changed
            self.codec.budget = MAX_VALUES // 2  # a value may take two brackets or commas
            try:
                reply = {"re": number, "value": self.codec.encode(result)}
                if changed:
                    reply["changed"] = [[k, self.codec.encode(a)] for k, a in changed]
            finally:
                self.codec.budget = None
            data = json.dumps(reply, separators=(",", ":")).encode() + b"\n"
            if len(data) > MAX_MESSAGE or too_large(data):
                raise ValueError(
                    f"a value too large to send ({len(data):,} bytes; at most {MAX_MESSAGE:,} bytes "
                    f"and {MAX_VALUES:,} numbers, lists or other values in one answer)"
                )
        except (ChannelClosed, ProtocolError):
            raise
        except BaseException as error:  # noqa: BLE001 - every failure is the other side's answer
            kind = type(error).__name__
            if self.debug:
                import traceback

                traceback.print_exc()
            self.send({"re": number, "error": {"type": kind, "message": clip(_message(error))}})
            if _fatal(error):
                raise
            return
        self.write(data)


ANSWERED = object()  # a request answered by another process (a forked copy): no reply from here


class InPlace:
    """A call's result, with the argument arrays the call changed: (their index among the
    writeable arrays of the arguments, their contents now)."""

    def __init__(self, value: Any, arrays: list[tuple[np.ndarray, np.ndarray]]):
        self.value = value
        self.changed = [
            (k, now)
            for k, (now, before) in enumerate(arrays)
            if now.shape != before.shape or now.tobytes() != before.tobytes()
        ]


SET_RECURSION_LIMIT = sys.setrecursionlimit  # Python's own, whatever code that runs later does to sys
ROOM = 4 * MAX_DEPTH  # frames above the reader's own that reading a message's nesting may take


def _parsed(line: bytes) -> Any:
    """``json.loads(line)`` with :data:`ROOM` above the frames of whoever reads it: a reply read
    deep in a student's recursion (ps03's ``topological_order`` reading the test's nodes near the
    limit) is read whole, and a RecursionError is their code's to meet, as in Jupyter. Read at the
    limit, it was a ProtocolError that ended the runner (0/2, where a recursive search that fell
    back on a stack of its own scored 2/2 in Jupyter)."""
    limit = sys.getrecursionlimit()
    SET_RECURSION_LIMIT(min(limit + ROOM, 2**31 - 1))  # a C int: a student's limit may be its largest
    try:
        return json.loads(line)
    finally:
        SET_RECURSION_LIMIT(limit)


def too_large(data: bytes) -> bool:
    """Whether a message holds more than ``MAX_VALUES`` values (an upper bound: its brackets
    and commas, counted without parsing it)."""
    return data.count(b",") + data.count(b"[") + data.count(b"{") > MAX_VALUES


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a student's exception whose __str__ fails
        return "(an exception whose message could not be read)"


def _fatal(error: BaseException) -> bool:
    """Errors that must still end the serving side (the judge's time limit)."""
    return type(error).__name__ == "CellTimeout"

"""The numbers a chapter's prose states, for tests that check facts rather than wording.

``numbers(text)`` reads every number written in markdown or LaTeX (``-0.297``, ``$-0.297$``,
``22,717``, ``2{,}800``, ``$3 \\times 10^{-9}$``, ``10^6``, ``1e-12``) together with the precision
it is written to; ``mentions(text, value)`` says whether the text states ``value`` to that precision
(``0.670`` states 0.6698, ``26`` states 26.34, ``2,800`` states 2829: trailing zeros count as
rounding only in numbers written with a thousands separator); ``near=`` narrows the
search to a window around a short key token (a unit, a symbol, a name), so that small numbers
are looked for where the fact is stated rather than anywhere in the chapter.
"""

from __future__ import annotations

import ast
import re

_TIMES_TEN = re.compile(r"(?<![\w^{.])(\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|×)\s*10\^\{?([-−]?\d+)\}?")
_POWER_OF_TEN = re.compile(r"(?<![\d.])10\^\{?([-−]?\d+)\}?")
_NUMBER = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.(\d+))?(?:[eE]([-+−]?\d+))?")


def numbers(text: str) -> list[tuple[float, float]]:
    """Every number in ``text`` as (value, half a unit of its last significant digit)."""
    text = text.replace("{,}", ",").replace("−", "-")
    text = _TIMES_TEN.sub(lambda m: f"{m[1]}e{m[2]}", text)
    text = _POWER_OF_TEN.sub(lambda m: f"1.000e{m[1]}", text)  # exact: 10^6 is not "about a million"
    found = []
    for match in _NUMBER.finditer(text):
        written = match[0]
        before = text[match.start() - 1] if match.start() else " "
        if written[0] in "+-":
            if before.isalnum() or before in ")_":  # a hyphen or an operator, not a sign
                written = written[1:]
        elif before.isalnum() or before in "._":  # part of a name such as x1, ps07, v_2
            continue
        mantissa, exponent = re.match(r"([^eE]+)(?:[eE](.+))?$", written).groups()
        digits = mantissa.replace(",", "").lstrip("+-")
        if "." in digits:
            unit = 10.0 ** -len(digits.split(".")[1])
        else:
            rounded = "," in mantissa and digits.strip("0")  # 2,800 is rounded, 200 is not
            unit = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if rounded else 1.0
        scale = 10.0 ** int(exponent) if exponent else 1.0
        found.append((float(written.replace(",", "")), unit * scale / 2))
    return found


def windows(text: str, key: str, within: int) -> list[str]:
    """The stretches of ``text`` of ``within`` characters either side of each occurrence of ``key``."""
    starts = [m.start() for m in re.finditer(re.escape(key), text)]
    assert starts, f"{key!r} does not occur in the text"
    return [text[max(0, s - within) : s + len(key) + within] for s in starts]


def mentions(text: str, value: float, *, near: str | None = None, within: int = 160) -> bool:
    """Whether ``text`` (or, with ``near``, a window around that token) states ``value`` to the
    precision the number is written with."""
    pieces = windows(text, near, within) if near else [text]
    return any(abs(written - value) <= tol * (1 + 1e-9) for piece in pieces for written, tol in numbers(piece))


def section(markdown: str, heading: str) -> str:
    """The markdown under the first heading matching the regex ``heading`` (any level), up to the
    next heading of the same or a higher level."""
    match = re.search(rf"^(#+)\s+{heading}.*$", markdown, re.M)
    assert match, f"no heading matching {heading!r}"
    level = len(match[1])
    end = re.compile(rf"^#{{1,{level}}}\s", re.M).search(markdown, match.end())
    return markdown[match.end() : end.start() if end else len(markdown)]


def mentions_all(text: str, values, *, near: str, within: int = 160) -> bool:
    """Whether one window around ``near`` states every one of ``values`` (one passage, one fact)."""
    return any(all(mentions(piece, value) for value in values) for piece in windows(text, near, within))


# ---- what cells print: the numbers on a line, after a short key ----------------------------------

_WORD_VALUES = re.compile(r"(?<![\w.])(True|False|[-+]?inf|nan)(?!\w)")


def readings(line: str) -> list[tuple[float, float] | bool]:
    """The numbers on a printed ``line``, in order, as ``numbers`` reads them, with ``True``/``False``
    as booleans and ``inf``/``nan`` as floats (``nan`` equals ``nan`` here)."""
    found: list[tuple[float, float] | bool] = []
    last = 0
    for match in _WORD_VALUES.finditer(line):
        found += numbers(line[last : match.start()])
        word = match[1]
        found.append(word == "True" if word in ("True", "False") else (float(word), 0.0))
        last = match.end()
    return found + numbers(line[last:])


def _same(found, expected) -> bool:
    if isinstance(expected, bool) or isinstance(found, bool):
        return isinstance(expected, bool) and isinstance(found, bool) and found == expected
    written, tol = found
    if expected != expected:
        return written != written
    if abs(expected) == float("inf"):
        return written == expected
    return abs(written - expected) <= tol * (1 + 1e-9)


def agrees(found: list, expected) -> bool:
    """Whether the printed ``found`` (from ``readings``) are ``expected``, one for one and in order,
    each to the precision printed; ``...`` in ``expected`` stands for any run of numbers."""
    expected = list(expected)
    if not expected:
        return not found
    if expected[0] is Ellipsis:
        return any(agrees(found[i:], expected[1:]) for i in range(len(found) + 1))
    return bool(found) and _same(found[0], expected[0]) and agrees(found[1:], expected[1:])


def after(text: str, key: str) -> list[list]:
    """For each line of ``text`` that contains ``key``, the ``readings`` after its first occurrence."""
    return [readings(line[line.index(key) + len(key) :]) for line in text.splitlines() if key in line]


def shows(text: str, key: str, *expected) -> int:
    """How many lines of ``text`` show, after ``key`` (a short label such as ``"hit:"`` or ``"dL/da"``;
    ``""`` for a whole line), exactly the numbers ``expected`` to the precision printed (see
    ``agrees``). Truthy when at least one does, so ``assert shows(...)`` reads as a check."""
    return sum(agrees(found, expected) for found in after(text, key))


def lines_with(text: str, key: str) -> str:
    """The lines of ``text`` that contain ``key`` (a label anywhere on the line), one per line."""
    found = [line for line in text.splitlines() if key in line]
    assert found, f"{key!r} is not printed"
    return "\n".join(found)


def listed(text: str, key: str):
    """The Python literal (list, dict, tuple) printed after ``key``, on the first line containing
    ``key`` that has one."""
    for line in lines_with(text, key).splitlines():
        rest = line[line.index(key) + len(key) :]
        for start in (i for i, c in enumerate(rest) if c in "[{("):
            try:
                return ast.literal_eval(rest[start:].strip())
            except (SyntaxError, ValueError):
                continue
    raise AssertionError(f"no literal printed after {key!r}")

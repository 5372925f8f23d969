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
        elif before.isalnum() or before in "._":  # part of a name such as x1, ps05, v_2
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

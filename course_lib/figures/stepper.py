"""Frames shown one at a time: a slider and buttons in a web page, an ipywidgets slider in a kernel.

A :class:`Stepper` holds drawings of equal size, each with a caption and a text alternative.
Shown in a notebook (or rendered by Jupyter Book or nbconvert) it is plain HTML: every
frame is an ``<img>`` of its SVG, and a small inline script turns the stack into one frame
with a *Previous step* / *Next step* pair and a labelled range slider, all usable from the
keyboard; the pair comes again under the frames, for pictures taller than the window. Nothing
is loaded from the network and no kernel is needed, so the built book steps offline; where
scripts do not run (an untrusted notebook), the frames stay listed one below the other, each
with its caption. ``Stepper.slider()`` gives the same frames on an ipywidgets slider for a
live kernel (Jupyter, Colab).

Every id in the HTML is derived from the stepper's ``name``, so the output is the same on every
run (nbval compares it) and two steppers on one page need two names.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Frame", "Stepper"]

_NAME = re.compile(r"[a-z][a-z0-9-]*")
# What graphviz writes before the <svg> element (XML declaration, doctype, comments with its
# version): not needed inside an <img>, and the version would change the stored output.
_PROLOGUE = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>|<!--.*?-->\s*", re.S)
_SIZE = re.compile(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"')


@dataclass(frozen=True)
class Frame:
    """One step: an SVG drawing, the caption under it and a text alternative saying what it shows."""

    svg: str
    caption: str
    alt: str

    @property
    def size(self) -> tuple[float, float]:
        """The drawing's width and height in points, as graphviz writes them."""
        match = _SIZE.search(self.svg)
        if match is None:
            raise ValueError('a Frame\'s svg must start with <svg width="...pt" height="...pt">, as graphviz writes')
        return float(match.group(1)), float(match.group(2))


class Stepper:
    """Frames of equal size, stepped through with a slider; ``name`` makes the HTML ids unique."""

    def __init__(self, frames: Sequence[Frame], name: str, title: str) -> None:
        if not frames:
            raise ValueError("a Stepper needs at least one frame")
        if not _NAME.fullmatch(name):
            raise ValueError(
                f"Stepper name {name!r}: use lower-case letters, digits and hyphens, starting with a letter "
                "(it becomes the HTML id, e.g. 'ch04-sweep')"
            )
        sizes = {frame.size for frame in frames}
        if len(sizes) > 1:
            raise ValueError(f"the frames of a Stepper must have one size, so the picture does not jump; got {sizes}")
        self.frames = [Frame(_PROLOGUE.sub("", f.svg).strip(), f.caption, f.alt) for f in frames]
        self.name, self.title = name, title

    def __len__(self) -> int:
        return len(self.frames)

    def __repr__(self) -> str:
        """The captions, one step a line: what a text-only front end shows."""
        return "\n".join([f"{self.title} ({len(self)} steps)", *(frame.caption for frame in self.frames)])

    def _repr_html_(self) -> str:
        return self.html()

    def frame_html(self, k: int) -> str:
        """Frame ``k`` (from 0) as HTML: its caption, then the picture (so the controls above
        and the caption stay in view while the top of a tall picture is read)."""
        frame = self.frames[k]
        width, height = (round(side * 4 / 3) for side in frame.size)  # points -> CSS pixels
        data = base64.b64encode(frame.svg.encode()).decode()
        return (
            f'<div class="stepper-frame" data-step="{k + 1}">'
            f'<p style="margin: 0 0 0.5em; min-height: 4.5em">{html.escape(frame.caption)}</p>'
            f'<img src="data:image/svg+xml;base64,{data}" width="{width}" height="{height}" '
            f'style="max-width: 100%; height: auto" alt="{html.escape(frame.alt)}"></div>'
        )

    def html(self) -> str:
        """The stepper as one self-contained piece of HTML (what notebooks and the book show).

        The buttons come twice, above the frames with the slider and again below them, so a
        picture taller than the window can be stepped through at either end of it."""
        n, name = len(self), self.name
        style = "display: none; flex-wrap: wrap; align-items: center; gap: 0.5em; margin: 0.5em 0"
        buttons = (
            '<button type="button" data-move="-1">Previous step</button>'
            '<button type="button" data-move="1">Next step</button>'
        )
        above = (
            f'<div class="stepper-controls" style="{style}">{buttons}'
            f'<label for="{name}-step">Step</label>'
            f'<input type="range" id="{name}-step" min="1" max="{n}" step="1" value="1">'
            f'<output for="{name}-step">step 1 of {n}</output></div>'
        )
        below = f'<div class="stepper-controls" style="{style}">{buttons}<output>step 1 of {n}</output></div>'
        frames = "".join(self.frame_html(k) for k in range(n))
        return (
            f'<div class="course-stepper" id="{name}" role="group" aria-label="{html.escape(self.title)}">'
            f"{above}"
            f'<div class="stepper-frames">{frames}</div>'
            f"{below}"
            f"<script>{_SCRIPT.replace('STEPPER_ID', name)}</script></div>"
        )

    def slider(self) -> Any:
        """The frames on an ipywidgets slider, for a live kernel (Jupyter, Colab)."""
        try:
            import ipywidgets as widgets
        except ImportError:
            raise ImportError(
                "Stepper.slider() needs ipywidgets: Colab has it; elsewhere run  pip install ipywidgets  "
                "(or display the stepper itself, whose buttons need no kernel)."
            ) from None
        step = widgets.IntSlider(value=1, min=1, max=len(self), step=1, description="Step")
        picture = widgets.HTML(self.frame_html(0))

        def show(change: dict) -> None:
            picture.value = self.frame_html(change["new"] - 1)

        step.observe(show, names="value")
        return widgets.VBox([step, picture])


# The buttons and the slider show one frame at a time. Without this script (an untrusted
# notebook) the controls stay hidden (display: none) and every frame stays listed, each with its caption.
_SCRIPT = """
(() => {
  const script = document.currentScript;
  const root = (script && script.closest(".course-stepper")) || document.getElementById("STEPPER_ID");
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "yes";
  const frames = [...root.querySelectorAll(".stepper-frame")];
  const controls = [...root.querySelectorAll(".stepper-controls")];  // above the frames and below
  const slider = root.querySelector(".stepper-controls input");
  const statuses = root.querySelectorAll(".stepper-controls output");
  const buttons = [...root.querySelectorAll(".stepper-controls button")];
  const show = (k) => {
    k = Math.min(Math.max(k, 1), frames.length);
    frames.forEach((frame, i) => { frame.hidden = i !== k - 1; });
    slider.value = String(k);
    statuses.forEach((status) => { status.textContent = `step ${k} of ${frames.length}`; });
    slider.setAttribute("aria-valuetext", `step ${k} of ${frames.length}`);
    for (const button of buttons) {
      button.setAttribute("aria-disabled", String(button.dataset.move === "-1" ? k === 1 : k === frames.length));
    }
  };
  slider.addEventListener("input", () => show(Number(slider.value)));
  for (const button of buttons) {
    button.addEventListener("click", () => show(Number(slider.value) + Number(button.dataset.move)));
  }
  controls.forEach((bar) => { bar.style.display = "flex"; });
  show(1);
  root.querySelector(".stepper-frames").setAttribute("aria-live", "polite");  // read each new step, not the first
})();
"""

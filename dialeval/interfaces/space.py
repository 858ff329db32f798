"""The shared body of the Hugging Face Spaces ``metrics/<m>/app.py``: a form in, the score and signature out.

An ``app.py`` describes its Space with :class:`Space` (metric name, title, which text boxes) and calls
:meth:`Space.build`, which imports gradio (installed on a Space, not needed by the library). Reading the form
(:meth:`Space.request`) and writing the answer (:meth:`Space.report`) are plain functions of text, testable without
gradio.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..scoring.base import ScoreOutput, Scorer
from ..scoring.registry import load_scorer

__all__ = ["FIELDS", "Space", "split_turns"]

#: The text boxes a Space can show: name -> (label, lines). Multi-turn boxes take one turn per line.
FIELDS: dict[str, tuple[str, int]] = {
    "context": ("Context (one turn per line, oldest first)", 4),
    "response": ("Response", 2),
    "reference": ("Reference response", 2),
    "dialogue": ("Dialogue (one turn per line; two speakers alternating, first speaker first)", 10),
}


def split_turns(text: str) -> list[str]:
    """The non-blank lines of ``text``, stripped: one turn each."""
    return [line.strip() for line in text.split("\n") if line.strip()]


@dataclass
class Space:
    """One metric's demo: ``fields`` are the text boxes (names of :data:`FIELDS`), in order; ``details`` maps a
    label to a metadata key of the score output holding one value per item, shown under the score."""

    metric: str
    title: str
    description: str
    score_label: str
    fields: tuple[str, ...] = ("context", "response")
    details: Mapping[str, str] = field(default_factory=dict)
    _scorer: Scorer | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        unknown = [name for name in self.fields if name not in FIELDS]
        if unknown:
            raise ValueError(f"Space {self.metric!r}: unknown fields {unknown}; known: {', '.join(FIELDS)}")
        if ("dialogue" in self.fields) != (self.fields == ("dialogue",)):
            raise ValueError(f"Space {self.metric!r}: a dialogue is scored on its own, got fields {self.fields}")

    def request(self, *texts: str) -> dict[str, list] | str:
        """The scorer's keyword arguments for one form, or the message asking for what is missing."""
        form = dict(zip(self.fields, texts, strict=True))
        if "dialogue" in form:
            turns = split_turns(form["dialogue"])
            return {"dialogues": [turns]} if len(turns) >= 2 else "Enter at least two turns, one per line."
        turns = split_turns(form["context"])
        missing = [name for name in self.fields if name != "context" and not form[name].strip()]
        if not turns or missing:
            wanted = ["at least one context turn"] + [f"a {name}" for name in self.fields if name != "context"]
            return f"Enter {', '.join(wanted[:-1])} and {wanted[-1]}."
        kwargs = {"contexts": [turns], "responses": [form["response"]]}
        if "reference" in form:
            kwargs["references"] = [form["reference"]]
        return kwargs

    def report(self, out: ScoreOutput) -> str:
        """The answer for one scored item: the score, any details, then the signature."""
        lines = [f"{self.score_label}: {out.scores[0]:.4f}"]
        lines += [f"{label}: {out.metadata[key][0]:.4f}" for label, key in self.details.items()]
        return "\n".join(lines) + f"\n\n{out.signature}"

    def answer(self, *texts: str) -> str:
        """Score one form (the scorer is loaded on the first call and kept)."""
        kwargs = self.request(*texts)
        if isinstance(kwargs, str):
            return kwargs
        if self._scorer is None:
            self._scorer = load_scorer(self.metric)
        if "dialogues" in kwargs:
            return self.report(self._scorer.score_dialogues(**kwargs))
        return self.report(self._scorer.score(**kwargs))

    def build(self):
        """The gradio demo (``demo.launch()`` serves it)."""
        import gradio as gr

        boxes = [gr.Textbox(lines=FIELDS[name][1], label=FIELDS[name][0]) for name in self.fields]
        return gr.Interface(fn=self.answer, inputs=boxes, outputs=gr.Textbox(label="Score"), title=self.title,
                            description=self.description)

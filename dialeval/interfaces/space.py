"""The shared body of the Hugging Face Spaces ``metrics/<m>/app.py``: a form in, the score and signature out.

A metric's spec (:class:`~dialeval.scoring.spec.SpaceSpec`) describes its Space (title, words, which text boxes);
``metrics/<m>/app.py`` takes ``SPACES[m]`` and calls :meth:`Space.build`, which imports gradio (installed on a Space,
not needed by the library). Reading the form (:meth:`Space.request`) and writing the answer (:meth:`Space.report`)
are plain functions of text, testable without gradio.

Scales: the answer gives the metric's raw score and, for a metric with a fitted map (``dialeval calibrate``), the
same score on the calibrated scale, its percentile among human replies (:mod:`dialeval.scoring.scales`).

Checkpoints: a metric that ships more than one checkpoint (``default`` on MiniLM, ``base`` on all-mpnet-base-v2:
:func:`~dialeval.scoring.checkpoints.shipped_names`) gets a menu of them after the text boxes, ``default`` chosen;
each is loaded when first asked for, and kept.

Examples: a Space exported by ``dialeval release`` has an ``examples.json`` beside its ``app.py``, items of the
benchmark data with their human ratings (:func:`write_examples`). Run from a checkout, where no such file exists,
the app shows the bundled demo items instead and says so on the page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from ..scoring.base import ScoreOutput, Scorer
from ..scoring.calibration import CalibrationError
from ..scoring.checkpoints import DEFAULT_CHECKPOINT, shipped_names
from ..scoring.registry import all_specs, load_scorer, metric_spec, scorer_class

__all__ = ["EXAMPLES_FILE", "FIELDS", "SPACES", "Example", "Space", "bundled_examples", "read_examples", "split_turns",
           "write_examples"]

#: The file beside an exported Space's ``app.py`` holding its examples.
EXAMPLES_FILE = "examples.json"

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


@dataclass(frozen=True)
class Example:
    """One example of a Space: the text of each box (in the Space's field order) and what it is, shown on the page
    (for example its source and human rating)."""

    inputs: tuple[str, ...]
    note: str


def write_examples(path: str | os.PathLike, examples: Sequence[Example]) -> None:
    Path(path).write_text(json.dumps([{"inputs": list(e.inputs), "note": e.note} for e in examples], indent=1,
                                     ensure_ascii=False) + "\n", encoding="utf-8")


def read_examples(path: str | os.PathLike, fields: Sequence[str]) -> list[Example]:
    """The examples in ``path``; ``ValueError`` naming the item and field unless each has one non-empty text per
    field and a note."""
    items = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path}: expected a non-empty JSON list of examples")
    out = []
    for i, item in enumerate(items):
        inputs = item.get("inputs") if isinstance(item, dict) else None
        if not isinstance(inputs, list) or len(inputs) != len(fields):
            raise ValueError(f"{path}: example {i}: 'inputs' must be a list of {len(fields)} texts "
                             f"({', '.join(fields)})")
        for name, text in zip(fields, inputs):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{path}: example {i}: field {name!r} must be a non-empty text")
        if not isinstance(item.get("note"), str):
            raise ValueError(f"{path}: example {i}: 'note' must be a text")
        out.append(Example(tuple(inputs), item["note"]))
    return out


def _turns_text(turns) -> str:
    """A demo item's turns (one text, texts, or role/content messages) as the box's one-turn-per-line text."""
    turns = [turns] if isinstance(turns, str) else turns
    return "\n".join(t["content"] if isinstance(t, dict) else t for t in turns)


def bundled_examples(fields: Sequence[str]) -> list[Example]:
    """The package's demo items (written for the README, not rated by people) in the shape of ``fields``."""
    resources = files("dialeval") / "resources"
    if tuple(fields) == ("dialogue",):
        rows = [json.loads(line) for line in (resources / "example_conversations.jsonl").read_text().splitlines()]
        return [Example((_turns_text(r["dialogue"]),), f"demo dialogue {r['id']}") for r in rows]
    rows = [json.loads(line) for line in (resources / "example_dialogues.jsonl").read_text().splitlines()]
    texts = {"context": lambda r: _turns_text(r["context"]), "response": lambda r: r["response"],
             "reference": lambda r: r["references"][0]}
    return [Example(tuple(texts[name](r) for name in fields), f"demo pair {r['id']}") for r in rows]


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
    _scorers: dict[str, Scorer] = field(default_factory=dict, init=False, repr=False)

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
        """The answer for one scored item: the raw score (and, for a calibrated output, the calibrated one), any
        details, then the signature."""
        if out.metadata.get("scale") == "calibrated":
            calibrated = out.scores[0]
            lines = [f"{self.score_label}: {out.metadata['raw_scores'][0]:.4f}",
                     f"calibrated: {calibrated:.4f} (higher than {calibrated:.0%} of human replies in DailyDialog "
                     "validation)"]
        else:
            lines = [f"{self.score_label}: {out.scores[0]:.4f}"]
        lines += [f"{label}: {out.metadata[key][0]:.4f}" for label, key in self.details.items()]
        return "\n".join(lines) + f"\n\n{out.signature}"

    @staticmethod
    def _scale(scorer: Scorer, level: str) -> str:
        """``calibrated`` where ``scorer`` has a map for ``level``, else ``raw`` (the answer then gives the raw score
        only)."""
        try:
            scorer.scale_map("calibrated", level)
        except CalibrationError:
            return "raw"
        return "calibrated"

    def checkpoints(self) -> list[str]:
        """The names of the metric's shipped checkpoints, ``default`` first (none for a metric without any)."""
        folder = getattr(scorer_class(self.metric), "checkpoint_dir", None)
        return shipped_names(folder) if folder else []

    def answer(self, *texts: str, checkpoint: str = DEFAULT_CHECKPOINT) -> str:
        """Score one form with the shipped checkpoint ``checkpoint`` (each scorer is loaded on its first call and
        kept)."""
        kwargs = self.request(*texts)
        if isinstance(kwargs, str):
            return kwargs
        if checkpoint not in self._scorers:
            options = {"checkpoint": checkpoint} if self.checkpoints() else {}
            self._scorers[checkpoint] = load_scorer(self.metric, **options)
        scorer = self._scorers[checkpoint]
        if "dialogues" in kwargs:
            return self.report(scorer.score_dialogues(**kwargs, scale=self._scale(scorer, "dialogue")))
        return self.report(scorer.score(**kwargs, scale=self._scale(scorer, "turn")))

    def answer_with_checkpoint(self, *inputs: str) -> str:
        """:meth:`answer` for a form whose last input is the checkpoint menu."""
        return self.answer(*inputs[:-1], checkpoint=inputs[-1])

    def examples(self, examples_file: str | os.PathLike | None) -> tuple[list[Example], str]:
        """The examples to show and a line saying where they come from: ``examples_file`` when it exists (an
        exported Space), else the bundled demo items."""
        if examples_file is not None and Path(examples_file).is_file():
            return read_examples(examples_file, self.fields), "Examples: items of the benchmark data, with their " \
                "human ratings."
        return bundled_examples(self.fields), "Examples: the package's demo items (an exported Space shows items " \
            "of the benchmark data with their human ratings instead)."

    def build(self, examples_file: str | os.PathLike | None = None):
        """The gradio demo (``demo.launch()`` serves it), with the examples of :meth:`examples` and, for a metric
        that ships several checkpoints, a menu of them."""
        import gradio as gr

        examples, origin = self.examples(examples_file)
        notes = "\n".join(f"{i + 1}. {e.note}" for i, e in enumerate(examples))
        inputs = [gr.Textbox(lines=FIELDS[name][1], label=FIELDS[name][0]) for name in self.fields]
        rows = [list(e.inputs) for e in examples]
        fn = self.answer
        if len(self.checkpoints()) > 1:
            inputs.append(gr.Dropdown(choices=self.checkpoints(), value=DEFAULT_CHECKPOINT, label=(
                "Checkpoint (default: all-MiniLM-L6-v2, fast; base: all-mpnet-base-v2, slower)")))
            rows = [[*row, DEFAULT_CHECKPOINT] for row in rows]
            fn = self.answer_with_checkpoint
        return gr.Interface(fn=fn, inputs=inputs, outputs=gr.Textbox(label="Score"), title=self.title,
                            description=self.description, examples=rows, article=f"{origin}\n\n{notes}",
                            cache_examples=False, flagging_mode="never")


class _SpacesFromSpecs(Mapping[str, Space]):
    """Each metric's Space, made once from the ``space`` of its :class:`~dialeval.scoring.spec.MetricSpec` (metrics
    added with :func:`~dialeval.scoring.registry.register` included); ``metrics/<m>/app.py`` builds ``SPACES[m]``."""

    def __init__(self) -> None:
        self._built: dict[str, Space] = {}

    @staticmethod
    def _names() -> list[str]:
        return sorted(s.name for s in all_specs() if s.space is not None)

    def __getitem__(self, metric: str) -> Space:
        if metric not in self._names():
            raise KeyError(metric)
        if metric not in self._built:
            spec = metric_spec(metric).space
            self._built[metric] = Space(metric, title=spec.title, description=spec.description,
                                        score_label=spec.score_label, fields=tuple(spec.fields),
                                        details=dict(spec.details))
        return self._built[metric]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


#: The Space of each metric that declares one.
SPACES: Mapping[str, Space] = _SpacesFromSpecs()

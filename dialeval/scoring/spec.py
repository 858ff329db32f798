"""What a metric is, declared once beside its code: :class:`MetricSpec`.

Every place that lists metrics reads the specs: the registry (``load_scorer``, ``dialeval list``), ``dialeval
train`` (its recipes), ``dialeval export`` (its model class, or a combination's members), the Spaces and the
release (its demo), the ``evaluate`` modules and the cards (the benchmarks its card reports). A metric declares its
spec in ``dialeval/metrics/<package>/spec.py`` (``SPECS``, a tuple: a package may hold several metrics, e.g.
BERT-RUBER and its unreferenced half); the baselines declare theirs in ``dialeval/baselines/spec.py``. Adding a
metric is one spec plus its folders (``dialeval/metrics/<m>/``, ``modeling/<m>/``, ``metrics/<m>/``, its checkpoint
and card results).

A spec module imports nothing heavy: classes are named as ``"module:Class"`` strings and imported when used, so
listing the metrics never imports torch or a model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Literal

__all__ = ["CombinationExportSpec", "CombinationMember", "ExportSpec", "MetricSpec", "PaperBudget", "RecipeSpec",
           "SpaceSpec", "best_checkpoint", "import_object"]

KINDS = ("baseline", "learned", "combination")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_COMMAND = re.compile(r"[a-z][a-z0-9-]*")


def import_object(path: str) -> Any:
    """The object a ``"package.module:Name"`` string names."""
    module, sep, name = path.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"{path!r} is not 'module:Name'")
    return getattr(import_module(module), name)


def best_checkpoint(opts: Any) -> str:
    """The end of a run's summary line: where its chosen checkpoint is."""
    return f"checkpoint: {opts.output_dir}/best"


@dataclass(frozen=True)
class PaperBudget:
    """A paper's training budget in the unit a run counts (``pairs_seen`` / ``examples_seen`` of its summary: optimizer
    steps x batch size x gradient accumulation), declared by the recipe's spec (:attr:`RecipeSpec.budgets`).
    ``stage``: the recipe's ``--stage`` it is the budget of (None: every run of the recipe).
    ``examples_per_epoch`` None: the run's own epoch (the paper's data are not here, the run's stand in); ``epochs``
    None: the run's own epochs (the paper fixes none). ``all_data_option``: an option that must be 0 (every example)
    for the run's own epoch to be the paper's."""

    stage: int | None
    examples_per_epoch: int | None
    epochs: int | None
    unit: str
    paper: str
    all_data_option: str | None = None

    def examples(self, run_examples_per_epoch: int | None, run_epochs: int | None,
                 options: Mapping[str, Any]) -> int | None:
        """The budget in examples for a run with this epoch and epoch count (None where it cannot be said)."""
        if self.examples_per_epoch is None and self.all_data_option and options.get(self.all_data_option, 0) != 0:
            return None  # the run subsamples: its epoch is not the paper's
        per_epoch = self.examples_per_epoch if self.examples_per_epoch is not None else run_examples_per_epoch
        epochs = self.epochs if self.epochs is not None else run_epochs
        return None if per_epoch is None or epochs is None else per_epoch * epochs


@dataclass(frozen=True)
class RecipeSpec:
    """One training command, ``dialeval train <command>``."""

    #: the command's name (words joined by '-', e.g. ``amr-parser``)
    command: str
    #: ``"module:Class"`` of the recipe's options dataclass: a :class:`~dialeval.training.options.TrainingOptions`
    #: when it trains through the shared loop (only such a recipe has ``dialeval train-speed <command>``), else a
    #: :class:`~dialeval.training.options.RecipeOptions` (the ensemble's, fitted in closed form)
    options: str
    #: the module holding ``run(opts) -> summary`` (imported when the command runs: it pulls in torch, datasets...)
    module: str
    #: ``"module:function"``: ``function(opts, summary) -> str``, the line printed when a run ends
    summary_line: str
    #: the paper's training budget (one per ``--stage`` where stages differ; none where the paper gives none):
    #: ``dialeval runs`` and ``training.json`` count a run's examples against it
    budgets: tuple[PaperBudget, ...] = ()

    def __post_init__(self) -> None:
        if not _COMMAND.fullmatch(self.command):
            raise ValueError(f"recipe command {self.command!r}: lower-case words joined by '-'")

    @property
    def run_metric(self) -> str:
        """The name a run folder of this recipe records as its metric (``prepared.json``): the command with '_'."""
        return self.command.replace("-", "_")

    def paper_budget(self, stage: int | None = None) -> PaperBudget | None:
        """The paper's budget of a run of this recipe (of ``--stage`` ``stage``), or None where it has none."""
        return next((b for b in self.budgets if b.stage is None or b.stage == stage), None)

    def options_class(self) -> type:
        return import_object(self.options)

    def run(self, opts: Any) -> dict:
        return import_module(self.module).run(opts)

    def describe(self, opts: Any, summary: dict) -> str:
        return import_object(self.summary_line)(opts, summary)


@dataclass(frozen=True)
class ExportSpec:
    """How a learned metric's checkpoint becomes a complete Hub folder (``dialeval export``)."""

    #: ``"module:Class"`` of the metric's ``PreTrainedModel``
    model_class: str
    #: config field naming the text encoder whose tokenizer makes the model's input ids (None: inputs are vectors)
    tokenizer_config_field: str | None = None
    #: ``"module:function"`` writing the Python code, for the model card, that scores one item with the exported model
    #: and ``transformers`` alone: ``function(model_id, config, context, response) -> str`` (``model_id``: the Hub
    #: id or the exported folder; ``config``: the checkpoint's ``config.json`` as a dict; the code prints the score
    #: that ``load_scorer(name).score`` gives). None: the model's inputs need dialeval's pre-processing (GRADE's
    #: keyword graph, RADE's segments, AMR graphs) or its score dialeval's post-processing (BERT-RUBER's calibrated
    #: hybrid), and the card scores text through dialeval only.
    transformers_usage: str | None = None

    @property
    def needs_dialeval(self) -> bool:
        """Whether turning text into the metric's score needs dialeval (no :attr:`transformers_usage`)."""
        return self.transformers_usage is None

    def usage_code(self, model_id: str, config: Mapping[str, Any], context: Sequence[str], response: str) -> str:
        """The code of :attr:`transformers_usage` for ``model_id`` (a ``ValueError`` where it has none)."""
        if self.transformers_usage is None:
            raise ValueError(f"{self.model_class}: no transformers_usage; its metric scores through dialeval only")
        return import_object(self.transformers_usage)(model_id, config, context, response)


@dataclass(frozen=True)
class CombinationMember:
    """One metric that a combination's checkpoint pins, as its model card lists it."""

    #: the member's name in the combination
    name: str
    #: the registered metric it scores with (None: one the combination builds in, e.g. the ensemble's turn count)
    metric: str | None
    #: what the checkpoint pinned: the member's checkpoint name and sha256, its encoder's sha256, its settings
    identity: Mapping[str, str]
    #: the combination's member sets that use it
    sets: tuple[str, ...] = ()

    @property
    def checkpoint_sha256(self) -> str | None:
        """The pinned checkpoint's short sha256 (None: a member without a checkpoint, e.g. a baseline)."""
        return self.identity.get("checkpoint_sha256")


@dataclass(frozen=True)
class CombinationExportSpec:
    """How a combination's checkpoint becomes a Hub folder (``dialeval export``): it has no model of its own, only a
    config that names its members (each pinned by its checkpoint's sha256), so the folder holds the checkpoint's
    files as they are and the model card, which lists the members; text is scored through dialeval, which runs
    every member."""

    #: ``"module:function"``: ``function(config, where) -> list[CombinationMember]``, the members that the
    #: checkpoint's ``config.json`` (``config``, a dict) names, after checking it as loading would and that every
    #: member it pins by checkpoint is the installed one (errors name ``where``, the member and the field)
    members: str

    def read_members(self, config: Mapping[str, Any], where: str) -> list[CombinationMember]:
        return import_object(self.members)(config, where)


@dataclass(frozen=True)
class SpaceSpec:
    """A metric's demo page (a Gradio Space): its title and words, the text boxes (names of
    :data:`dialeval.interfaces.space.FIELDS`, in order) and ``details`` (label -> a metadata key holding one value
    per item, shown under the score)."""

    title: str
    description: str
    score_label: str
    fields: tuple[str, ...] = ("context", "response")
    details: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    """Everything the library needs to know about one metric (see the module docstring)."""

    #: the one name, everywhere: registry, ``evaluate`` module (``dialeval/<name>``), card, Space, export
    name: str
    #: ``"module:Class"`` of its :class:`~dialeval.scoring.base.Scorer`
    scorer: str
    #: ``baseline`` (no training), ``learned`` (a trained model of its own) or ``combination`` (a fitted combination
    #: of other metrics' scores, e.g. the ensemble)
    kind: Literal["baseline", "learned", "combination"] = "learned"
    #: other spellings the command line accepts for ``name`` (e.g. ``bert-ruber``)
    aliases: tuple[str, ...] = ()
    #: its training commands (``dialeval train <command>``)
    recipes: tuple[RecipeSpec, ...] = ()
    #: how ``dialeval export`` writes its checkpoint as a Hub folder: a model's (:class:`ExportSpec`, learned metrics)
    #: or a combination's (:class:`CombinationExportSpec`); None: not exported
    export: ExportSpec | CombinationExportSpec | None = None
    #: its demo page (None: no Space)
    space: SpaceSpec | None = None
    #: whether ``metrics/<name>/`` holds its ``evaluate`` module (installed as ``dialeval.evaluate_modules.<name>``)
    evaluate_module: bool = False
    #: the benchmarks its card reports (``hub_cards/results/<name>.json`` holds its results on each of them)
    card_benchmarks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"metric name {self.name!r}: letters, digits and '_', starting with a letter")
        if self.kind not in KINDS:
            raise ValueError(f"metric {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if (self.space is not None or self.card_benchmarks) and not self.evaluate_module:
            raise ValueError(f"metric {self.name!r}: a Space or a card needs the metric's evaluate module folder")
        combination_export = isinstance(self.export, CombinationExportSpec)
        if self.export is not None and combination_export != (self.kind == "combination"):
            raise ValueError(f"metric {self.name!r}: a combination exports with a CombinationExportSpec, any other "
                             f"metric with an ExportSpec (kind {self.kind!r}, export {type(self.export).__name__})")

    def scorer_class(self) -> type:
        return import_object(self.scorer)

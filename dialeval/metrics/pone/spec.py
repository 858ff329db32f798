"""PONE's declaration: scorer, training command, export, Space and card (:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, RecipeSpec, SpaceSpec, best_checkpoint


def summary_line(opts: Any, s: dict) -> str:
    return (f"{s['variant']}: best {opts.selection} {s[f'best_{opts.selection}']:.4f} at step {s['best_step']} "
            f"({s['total_seconds']:.0f} s); {best_checkpoint(opts)}")


SPECS = (
    MetricSpec(
        name="pone",
        scorer="dialeval.metrics.pone.scorer:PoneScorer",
        recipes=(RecipeSpec("pone", "dialeval.metrics.pone.options:PoneTrainingOptions",
                            "dialeval.metrics.pone.train", "dialeval.metrics.pone.spec:summary_line"),),
        export=ExportSpec("dialeval.modeling.bert_ruber:PoneModel"),
        space=SpaceSpec(
            title="PONE: unreferenced response score (dialeval)", score_label="PONE score",
            description="How appropriate a response is to its context, in (0, 1), without a reference. Runs offline on "
                        "CPU."),
        evaluate_module=True,
        card_benchmarks=("dailydialog_pp", "fed_turn", "grade_eval", "sanity_dialogue", "sanity_turn",
                         "usr_personachat", "usr_topicalchat"),
    ),
)

"""GRADE's declaration: scorer, training command, export, Space and card (:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, PaperBudget, RecipeSpec, SpaceSpec, best_checkpoint

#: DailyDialog's training split: 59,261 distinct (two-turn context, response) windows (GRADE's positives,
#: :func:`dialeval.metrics.grade.data.context_windows`).
DAILYDIALOG_TRAIN_WINDOWS = 59_261


def summary_line(opts: Any, s: dict) -> str:
    return (f"best {opts.select_by} {s[f'best_{opts.select_by}']:.4f} at step {s['best_step']} of "
            f"{s['steps']}; {best_checkpoint(opts)}")


SPECS = (
    MetricSpec(
        name="grade",
        scorer="dialeval.metrics.grade.scorer:GradeScorer",
        recipes=(RecipeSpec("grade", "dialeval.metrics.grade.options:GradeTrainingOptions",
                            "dialeval.metrics.grade.train", "dialeval.metrics.grade.spec:summary_line",
                            budgets=(PaperBudget(None, 2 * DAILYDIALOG_TRAIN_WINDOWS, 5, "ranking pairs",
                                                 "every DailyDialog window with 2 negatives (2 pairs each), 5 "
                                                 "epochs"),)),),
        export=ExportSpec("dialeval.modeling.grade:GradeModel", tokenizer_config_field="base_encoder"),
        space=SpaceSpec(
            title="GRADE: graph-enhanced coherence metric (dialeval)", score_label="GRADE score",
            description="Coherence of a response with its context, in (0, 1); the last two context turns are read. "
                        "Runs offline on CPU."),
        evaluate_module=True,
        card_benchmarks=("grade_eval", "fed_turn", "sanity_turn", "sanity_dialogue"),
    ),
)

"""RADE's declaration: scorer, training command, export, Space and card (:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, PaperBudget, RecipeSpec, SpaceSpec, best_checkpoint

#: The RADE paper's stage-1 (cross-domain pre-training) set: DSTC10 examples (not available here).
RADE_STAGE1_EXAMPLES = 54_438


def summary_line(opts: Any, s: dict) -> str:
    test = s.get("test_correlations", {})
    tested = "".join(f"; test {name} Pearson {v['pearson']:.3f} / Spearman {v['spearman']:.3f}"
                     for name, v in test.items() if name != "all")
    return (f"stage {opts.stage}: best val_correlation {s['best_val_correlation']:.4f} at step {s['best_step']} of "
            f"{s['steps']}{tested}; {best_checkpoint(opts)} (for scoring: {s['scoring_checkpoint']})")


SPECS = (
    MetricSpec(
        name="rade",
        scorer="dialeval.metrics.rade.scorer:RadeScorer",
        recipes=(RecipeSpec("rade", "dialeval.metrics.rade.options:RadeTrainingOptions",
                            "dialeval.metrics.rade.train", "dialeval.metrics.rade.spec:summary_line",
                            budgets=(PaperBudget(1, RADE_STAGE1_EXAMPLES, 10, "examples",
                                                 "stage 1: 54,438 DSTC10 examples, 10 epochs"),
                                     PaperBudget(2, None, 10, "examples", "stage 2: 10 epochs of the stage's sets"))),),
        export=ExportSpec("dialeval.modeling.rade:RadeModel", tokenizer_config_field="base_encoder"),
        space=SpaceSpec(
            title="RADE: reference-assisted response score (dialeval)", score_label="RADE score (1-5)",
            fields=("context", "response", "reference"),
            description="The human-scale (1-5) score of a response, read beside its context and a reference response, "
                        "from a model trained on RADE's annotations. Runs offline on CPU."),
        evaluate_module=True,
        card_benchmarks=("rade_chitchat", "rade_emotion", "rade_persona", "grade_eval", "usr_personachat",
                         "usr_topicalchat"),
    ),
)

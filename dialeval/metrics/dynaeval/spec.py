"""DynaEval's declaration: scorer, training command, export, Space and card
(:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, RecipeSpec, SpaceSpec, best_checkpoint


def summary_line(opts: Any, s: dict) -> str:
    test = (f"; test pair accuracy {s['test_pair_accuracy']:.4f} (adjacent cosine, untrained: "
            f"{s['test_adjacent_cosine_pair_accuracy']:.4f})" if "test_pair_accuracy" in s else "")
    return (f"best validation pair accuracy {s['best_val_pair_accuracy']:.4f} at step {s['best_step']} of "
            f"{s['steps']}{test}; {best_checkpoint(opts)}")


SPECS = (
    MetricSpec(
        name="dynaeval",
        scorer="dialeval.metrics.dynaeval.scorer:DynaEvalScorer",
        recipes=(RecipeSpec("dynaeval", "dialeval.metrics.dynaeval.options:DynaEvalTrainingOptions",
                            "dialeval.metrics.dynaeval.train", "dialeval.metrics.dynaeval.spec:summary_line"),),
        export=ExportSpec("dialeval.modeling.dynaeval:DynaEvalModel"),
        space=SpaceSpec(
            title="DynaEval: dialogue-level coherence (dialeval)", score_label="DynaEval score",
            fields=("dialogue",),
            description="Coherence of a whole conversation from a speaker-aware utterance graph; unbounded, higher is "
                        "better. Runs offline on CPU."),
        evaluate_module=True,
        card_benchmarks=("fed_dialogue", "fed_turn", "sanity_dialogue", "sanity_turn"),
    ),
)

"""The ensemble's declaration: scorer, training command, export, ``evaluate`` module and card
(:class:`~dialeval.scoring.spec.MetricSpec`).

Its checkpoint is a fitted combination of the other metrics' (a ``config.json`` that names them), not a model: it is
exported as a combination (:class:`~dialeval.scoring.spec.CombinationExportSpec`, the members from :mod:`.export`).
It has no Space yet."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import CombinationExportSpec, MetricSpec, RecipeSpec, best_checkpoint


def summary_line(opts: Any, s: dict) -> str:
    full = s["member_sets"]["full"]
    return (f"ensemble (full): {full['combiner']} chosen by leave-one-out, mean {full['loo_mean']:.3f} over the "
            f"held-out sets, {full['margin_over_best_member']:+.3f} over the best member ({full['best_member']}); "
            f"{best_checkpoint(opts)}")


SPECS = (
    MetricSpec(
        name="ensemble",
        scorer="dialeval.metrics.ensemble.scorer:EnsembleScorer",
        kind="combination",
        recipes=(RecipeSpec("ensemble", "dialeval.metrics.ensemble.options:EnsembleTrainingOptions",
                            "dialeval.metrics.ensemble.train", "dialeval.metrics.ensemble.spec:summary_line",
                            uses_training_loop=False),),
        export=CombinationExportSpec("dialeval.metrics.ensemble.export:exported_members"),
        evaluate_module=True,
        card_benchmarks=("sanity_turn",),
    ),
)

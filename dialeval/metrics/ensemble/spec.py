"""The ensemble's declaration: scorer, training command, export, Space, ``evaluate`` module and card
(:class:`~dialeval.scoring.spec.MetricSpec`).

Its checkpoint is a fitted combination of the other metrics' (a ``config.json`` that names them), not a model: it is
exported as a combination (:class:`~dialeval.scoring.spec.CombinationExportSpec`, the members from :mod:`.export`),
and its Space shows, under the score, each default member's calibrated score (the scorer's metadata)."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import CombinationExportSpec, MetricSpec, RecipeSpec, SpaceSpec, best_checkpoint

#: The members of the shipped checkpoint's default member set (``full``) at turn level, in its order: the Space shows
#: each one's calibrated score (metadata ``<member>_calibrated_scores``). A test checks them against the checkpoint.
SPACE_MEMBERS = ("grade", "pone", "bert_ruber_unref", "context_cosine")


def summary_line(opts: Any, s: dict) -> str:
    full = s["member_sets"]["full"]
    return (f"ensemble (full): {full['combiner']} chosen by leave-one-out, above the held-out set's best member on "
            f"{full['above_best_member']} of {full['n_sets']} sets, mean {full['loo_mean']:.3f}, "
            f"{full['margin_over_best_member']:+.3f} over the best member ({full['best_member']}); "
            f"{best_checkpoint(opts)}")


SPECS = (
    MetricSpec(
        name="ensemble",
        scorer="dialeval.metrics.ensemble.scorer:EnsembleScorer",
        kind="combination",
        recipes=(RecipeSpec("ensemble", "dialeval.metrics.ensemble.options:EnsembleTrainingOptions",
                            "dialeval.metrics.ensemble.train", "dialeval.metrics.ensemble.spec:summary_line"),),
        export=CombinationExportSpec("dialeval.metrics.ensemble.export:exported_members"),
        space=SpaceSpec(
            title="dialeval ensemble: the metrics combined (slower: it runs every member)",
            score_label="ensemble score",
            description="Combines dialeval's metrics: each member scores the response, its score is mapped to [0, 1] "
                        "by a fixed calibration, and the calibrated scores are averaged (the combiner chosen by "
                        "leave-one-benchmark-out). Slower than any one metric: it runs every member (GRADE "
                        "included), offline on CPU. Each member's calibrated score is shown under the score.",
            details={f"{m}, calibrated": f"{m}_calibrated_scores" for m in SPACE_MEMBERS}),
        evaluate_module=True,
        card_benchmarks=("sanity_turn",),
    ),
)

"""RADE's training objectives, one function per stage, each term switchable for the paper's ablations.

* Stage 1 (cross-domain pre-training, RADE(PT)): MSE of the candidate's predicted score against its label, plus
  the generation NLL of the reference given the context.
* Stage 2 (task-specific, RADE(TS)): MSE of the reference's score, MSE of the candidate's score, the generation NLL,
  and a pairwise ranking loss that keeps the annotated order of reference and candidate: with ``d`` the predicted
  difference (reference minus candidate) and ``sign`` the sign of the annotated difference,
  ``max(0, margin - sign * d)`` for pairs whose annotated scores differ (tied pairs add nothing).

Scores are on the labels' scale (the model maps its outputs into ``[score_min, score_max]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class LossWeights:
    """Which terms a stage uses and their weights (0 switches a term off: the ablations)."""

    reference_mse: float = 1.0
    candidate_mse: float = 1.0
    generation: float = 1.0
    ranking: float = 1.0
    ranking_margin: float = 0.1


STAGE_1 = LossWeights(reference_mse=0.0, ranking=0.0)
STAGE_2 = LossWeights()


def ranking_loss(predicted: torch.Tensor, labels: torch.Tensor, margin: float) -> torch.Tensor:
    """Hinge on the predicted reference-minus-candidate difference, in the annotated direction; the mean over the
    pairs whose labels differ (0 when none do). ``predicted`` and ``labels``: [B, 2] (reference, candidate)."""
    sign = torch.sign(labels[:, 0] - labels[:, 1])
    ordered = sign != 0
    if not ordered.any():
        return predicted.sum() * 0.0  # keeps the graph, adds nothing
    diff = predicted[:, 0] - predicted[:, 1]
    return F.relu(margin - sign[ordered] * diff[ordered]).mean()


def rade_loss(predicted: torch.Tensor, labels: torch.Tensor, generation_loss: torch.Tensor | None,
              weights: LossWeights) -> tuple[torch.Tensor, dict[str, float]]:
    """The weighted sum of the terms ``weights`` switches on, and each term's value (for the log).

    ``predicted``, ``labels``: [B, 2] scores of (reference, candidate); ``generation_loss``: the model's NLL (needed
    when ``weights.generation`` > 0)."""
    if predicted.shape != labels.shape or predicted.dim() != 2 or predicted.shape[1] != 2:
        raise ValueError(f"predicted and labels must both be [B, 2], got {tuple(predicted.shape)} and "
                         f"{tuple(labels.shape)}")
    terms: dict[str, torch.Tensor] = {}
    if weights.reference_mse:
        terms["reference_mse"] = F.mse_loss(predicted[:, 0], labels[:, 0])
    if weights.candidate_mse:
        terms["candidate_mse"] = F.mse_loss(predicted[:, 1], labels[:, 1])
    if weights.generation:
        if generation_loss is None:
            raise ValueError("the generation term is on but the model returned no generation loss (pass the "
                             "context and reference labels)")
        terms["generation"] = generation_loss
    if weights.ranking:
        terms["ranking"] = ranking_loss(predicted, labels, weights.ranking_margin)
    if not terms:
        raise ValueError("every loss term is switched off")
    total = sum(getattr(weights, name) * value for name, value in terms.items())
    return total, {name: float(value.detach()) for name, value in terms.items()}


__all__ = ["STAGE_1", "STAGE_2", "LossWeights", "rade_loss", "ranking_loss"]

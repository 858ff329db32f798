"""RADE's objectives (dialeval.metrics.rade.losses): each term, the stages, the ablation switches."""

import pytest
import torch

from dialeval.metrics.rade.losses import STAGE_1, STAGE_2, LossWeights, rade_loss, ranking_loss


def test_ranking_loss_keeps_the_annotated_order_and_ignores_ties():
    labels = torch.tensor([[4.0, 2.0], [2.0, 4.0], [3.0, 3.0]])
    right = torch.tensor([[3.5, 2.5], [2.0, 3.0], [1.0, 5.0]])  # both ordered pairs right by more than the margin
    assert ranking_loss(right, labels, margin=0.1).item() == 0.0
    wrong = torch.tensor([[2.0, 3.0], [2.0, 3.0], [1.0, 5.0]])  # the first pair reversed by 1.0
    assert ranking_loss(wrong, labels, margin=0.1).item() == pytest.approx((1.1 + 0.0) / 2)
    ties = torch.tensor([[3.0, 3.0]])
    assert ranking_loss(torch.tensor([[1.0, 5.0]], requires_grad=True), ties, margin=0.1).item() == 0.0


def test_stage_two_sums_all_four_terms_and_stage_one_two():
    predicted = torch.tensor([[3.0, 2.0], [2.0, 2.5]], requires_grad=True)
    labels = torch.tensor([[4.0, 2.0], [1.0, 3.0]])
    nll = torch.tensor(2.0)
    total, parts = rade_loss(predicted, labels, nll, STAGE_2)
    assert set(parts) == {"reference_mse", "candidate_mse", "generation", "ranking"}
    assert parts["reference_mse"] == pytest.approx((1.0 + 1.0) / 2)
    assert parts["candidate_mse"] == pytest.approx((0.0 + 0.25) / 2)
    assert parts["ranking"] == pytest.approx(0.0)  # 3-2 > 0.1 and 2.5-2 > 0.1 in the annotated directions
    assert total.item() == pytest.approx(1.0 + 0.125 + 2.0)
    total.backward()
    assert predicted.grad is not None
    total1, parts1 = rade_loss(predicted, labels, nll, STAGE_1)
    assert set(parts1) == {"candidate_mse", "generation"} and total1.item() == pytest.approx(2.125)


def test_switches_and_bad_input():
    predicted, labels = torch.zeros(2, 2), torch.ones(2, 2)
    _, parts = rade_loss(predicted, labels, None, LossWeights(generation=0.0))  # "w/o generation loss"
    assert "generation" not in parts
    with pytest.raises(ValueError, match="no generation loss"):
        rade_loss(predicted, labels, None, STAGE_2)
    with pytest.raises(ValueError, match=r"\[B, 2\]"):
        rade_loss(torch.zeros(2), torch.zeros(2), None, STAGE_2)
    with pytest.raises(ValueError, match="switched off"):
        rade_loss(predicted, labels, None, LossWeights(0.0, 0.0, 0.0, 0.0))

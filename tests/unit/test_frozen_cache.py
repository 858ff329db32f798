"""The frozen-layer cache of ``--frozen-cache`` (dialeval.training.frozen_cache): each token row computed once, on
its own tokens, and given back wherever it comes again, padded to the batch."""

import pytest
import torch

from dialeval.training.frozen_cache import FrozenStateCache


class Recorder:
    """States that name their token: id * 10 + token type, and the mask, as [b, L, 2]; records each call's rows
    (by first id)."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __call__(self, input_ids, attention_mask, token_type_ids=None):
        self.calls.append(input_ids[:, 0].tolist())
        extra = 0 if token_type_ids is None else token_type_ids
        return torch.stack([input_ids * 10.0 + extra, attention_mask.float()], dim=-1)


def padded(rows: list[list[int]], width: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
        mask[i, :len(row)] = 1
    return ids, mask


def test_rows_are_computed_once_on_their_own_tokens_and_come_back_padded_to_the_batch():
    compute = Recorder()
    cache = FrozenStateCache(compute)
    ids, mask = padded([[1, 2], [3, 4, 5]], width=4)
    first = cache.states(ids, mask, token_type_ids=torch.ones_like(ids))
    assert compute.calls == [[1, 3]] and cache.misses == 2 and cache.hits == 0 and cache.tokens == 5
    assert first.shape == (2, 4, 2)
    assert first[0, :, 0].tolist() == [11.0, 21.0, 0.0, 0.0]  # padding positions are zeros
    assert first[1, :, 0].tolist() == [31.0, 41.0, 51.0, 0.0]
    # a later batch, wider: row [3, 4, 5] again (kept: not computed, its states as first computed), a new row [6]
    ids, mask = padded([[6], [3, 4, 5]], width=5)
    again = cache.states(ids, mask, token_type_ids=torch.ones_like(ids))
    assert compute.calls == [[1, 3], [6]] and cache.misses == 3 and cache.hits == 1
    assert again[1, :, 0].tolist() == [31.0, 41.0, 51.0, 0.0, 0.0] and again[0, :, 0].tolist() == [61.0, 0, 0, 0, 0]
    # the same ids with other token types are another row
    ids, mask = padded([[3, 4, 5]], width=3)
    assert cache.states(ids, mask, token_type_ids=torch.zeros_like(ids))[0, :, 0].tolist() == [30.0, 40.0, 50.0]
    assert cache.misses == 4
    # one row twice in a batch (two examples of one context): computed once
    ids, mask = padded([[2, 2], [2, 2]], width=2)
    twice = cache.states(ids, mask)
    assert compute.calls[-1] == [2] and cache.misses == 5 and cache.hits == 2
    torch.testing.assert_close(twice[0], twice[1])


def test_left_padded_rows_are_refused():
    ids = torch.tensor([[0, 1, 2]])
    with pytest.raises(ValueError, match="right-padded rows"):
        FrozenStateCache(Recorder()).states(ids, torch.tensor([[0, 1, 1]]))

"""``--length-buckets``: batches of rows of similar length (dialeval.training.buckets) keep every row exactly once per
epoch in a seeded order, cut the padding, and leave the loss as it was: a batch padded to its longest row scores its
rows as one padded to the fixed maximum (GRADE's and RADE's models, tiny configurations)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dialeval.training.buckets import epoch_batches_for, length_bucketed_batches
from dialeval.training.loop import shuffled_batches
from dialeval.training.speed import SpeedSetting, parse_settings

LENGTHS = np.random.default_rng(5).integers(8, 128, size=203)  # 12 batches of 16, 11 rows left over


def _epoch(epoch_batches, epoch: int) -> list[np.ndarray]:
    return [np.asarray(b) for b in epoch_batches(epoch)]


def _padded(batches, lengths) -> int:
    return sum(len(b) * int(lengths[b].max()) for b in batches)


def test_every_row_once_per_epoch_the_rows_plain_shuffling_keeps():
    count, bucketed = length_bucketed_batches(LENGTHS, batch_size=16, gradient_accumulation=1, seed=3, pool=4)
    plain_count, plain = shuffled_batches(len(LENGTHS), batch_size=16, gradient_accumulation=1, seed=3)
    assert count == plain_count == 12
    for epoch in range(3):
        batches = _epoch(bucketed, epoch)
        assert len(batches) == 12 and {len(b) for b in batches} == {16}
        rows = np.concatenate(batches)
        assert len(set(rows.tolist())) == len(rows)  # no row twice
        assert sorted(rows.tolist()) == sorted(np.concatenate(_epoch(plain, epoch)).tolist())  # the same rows
    # less padding than plain batches of the same rows
    assert _padded(_epoch(bucketed, 0), LENGTHS) < 0.8 * _padded(_epoch(plain, 0), LENGTHS)


def test_the_order_is_fixed_by_seed_and_epoch():
    def batches(seed, epoch):
        return [b.tolist() for b in _epoch(length_bucketed_batches(LENGTHS, batch_size=16, gradient_accumulation=1,
                                                                   seed=seed, pool=4)[1], epoch)]

    assert batches(3, 0) == batches(3, 0)  # reproducible (a resumed run skips into the same order)
    assert batches(3, 0) != batches(3, 1) and batches(3, 0) != batches(4, 0)


def test_each_pool_is_sorted_into_batches_and_the_batches_shuffled():
    count, bucketed = length_bucketed_batches(LENGTHS, batch_size=16, gradient_accumulation=1, seed=3, pool=12)
    batches = _epoch(bucketed, 0)  # one pool of the whole epoch: the batches are consecutive runs of sorted rows
    spans = sorted((int(LENGTHS[b].min()), int(LENGTHS[b].max())) for b in batches)
    assert all(high <= low_next for (_, high), (low_next, _) in zip(spans, spans[1:]))
    assert [int(LENGTHS[b].max()) for b in batches] != sorted(int(LENGTHS[b].max()) for b in batches)  # shuffled
    # pool 1: the rows of each plain batch stay together (only their order within it and the batches' order change)
    _, one = length_bucketed_batches(LENGTHS, batch_size=16, gradient_accumulation=1, seed=3, pool=1)
    _, plain = shuffled_batches(len(LENGTHS), batch_size=16, gradient_accumulation=1, seed=3)
    assert sorted(sorted(b.tolist()) for b in _epoch(one, 0)) == sorted(sorted(b.tolist()) for b in _epoch(plain, 0))


def test_a_recipes_own_permutation_and_the_refusals():
    def permutation(epoch):
        return np.random.default_rng(71 + epoch).permutation(len(LENGTHS))

    _, bucketed = length_bucketed_batches(LENGTHS, batch_size=16, gradient_accumulation=1, seed=71, pool=1,
                                          permutation=permutation)
    kept = permutation(0)[:12 * 16]
    assert sorted(np.concatenate(_epoch(bucketed, 0)).tolist()) == sorted(kept.tolist())
    with pytest.raises(ValueError, match="pool must be at least 1"):
        length_bucketed_batches(LENGTHS, batch_size=16, gradient_accumulation=1, seed=0, pool=0)
    with pytest.raises(ValueError, match="less than one step"):
        length_bucketed_batches(LENGTHS, batch_size=16, gradient_accumulation=13, seed=0, pool=2)


def test_recipe_options_choose_plain_or_bucketed_batches():
    from types import SimpleNamespace

    calls = []

    def lengths():
        calls.append(1)
        return LENGTHS

    opts = SimpleNamespace(batch_size=16, gradient_accumulation=1, seed=3, length_buckets=0)
    _, plain = epoch_batches_for(lengths, len(LENGTHS), opts)
    assert not calls  # lengths are not computed for plain batches
    _, reference = shuffled_batches(len(LENGTHS), batch_size=16, gradient_accumulation=1, seed=3)
    assert [b.tolist() for b in _epoch(plain, 0)] == [b.tolist() for b in _epoch(reference, 0)]
    _, bucketed = epoch_batches_for(lengths, len(LENGTHS), SimpleNamespace(**{**vars(opts), "length_buckets": 4}))
    assert calls and _padded(_epoch(bucketed, 0), LENGTHS) < _padded(_epoch(plain, 0), LENGTHS)


def test_the_speed_benchmark_takes_the_recipes_buckets():
    plain, bucketed = parse_settings("fp32+buckets=0,bf16+buckets=64")
    assert plain == SpeedSetting(length_buckets=0) and bucketed == SpeedSetting(precision="bf16", length_buckets=64)
    assert SpeedSetting(precision="bf16", length_buckets=64).name == "bf16+buckets=64"


# -- the loss does not depend on the padding ---------------------------------------------------------------------------

TINY_ENCODER = {"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                "intermediate_size": 64, "max_position_embeddings": 64, "type_vocab_size": 2, "pad_token_id": 0}


class _Tokenizer:
    """Word ids from a fixed vocabulary (what GradeInputBuilder and RadeInputBuilder ask of a tokenizer); a pair is
    BERT's ``[CLS] a [SEP] b [SEP]``."""

    cls_token_id, sep_token_id, pad_token_id = 1, 2, 0

    def __call__(self, texts, pair=None, add_special_tokens=False, verbose=False, return_special_tokens_mask=False):
        def ids(text):
            return [3 + sum(map(ord, w)) % 90 for w in text.split()]
        if pair is not None:
            a, b = ids(texts), ids(pair)
            return {"input_ids": [1, *a, 2, *b, 2], "special_tokens_mask": [1, *[0] * len(a), 1, *[0] * len(b), 1]}
        return {"input_ids": [ids(t) for t in texts] if isinstance(texts, list) else ids(texts)}


PAIRS = [(["Do you like the sea?", "I swim every summer there."], "Yes, the water is warm in July."),
         (["Hi.", "Hi there."], "Hello!"),
         (["Can you help me cook dinner tonight?", "Of course."], "A soup with carrots, onions and some chicken."),
         (["The train is late.", "Again?"], "Let us drink a coffee while we wait for it.")]


def test_grade_loss_is_the_same_padded_to_the_batch_or_to_the_maximum():
    from dialeval.metrics.grade.inputs import GradeInputBuilder
    from dialeval.metrics.grade.train import pair_loss, row_lengths
    from dialeval.modeling.grade import GradeConfig, GradeModel

    builder = GradeInputBuilder(_Tokenizer(), None, max_seq_length=16, use_graph=False)
    torch.manual_seed(0)
    model = GradeModel(GradeConfig(encoder_config=dict(TINY_ENCODER), base_encoder="", use_graph=False,
                                   pooling="pair", text_dim=10, fusion_dims=[8, 4], max_seq_length=16)).eval()
    pos = builder.prepare(PAIRS)
    neg = builder.prepare([(c, r) for (c, _), (_, r) in zip(PAIRS, PAIRS[1:] + PAIRS[:1])])
    longest = [builder.collate(items) for items in (pos, neg)]
    fixed = [builder.collate(items, width=32) for items in (pos, neg)]  # past the 16 of the longest, cut, pair
    with torch.no_grad():
        for kind in ("pairwise", "pointwise", "both"):
            torch.testing.assert_close(pair_loss(model(**longest[0]), model(**longest[1]), kind),
                                       pair_loss(model(**fixed[0]), model(**fixed[1]), kind), atol=1e-5, rtol=1e-5)
    # row_lengths: the tokens of the longer of the two inputs of each pair
    texts = sorted({t for c, r in PAIRS for t in (*c, r)})
    index = {t: i for i, t in enumerate(texts)}
    arrays = {"context": np.array([[index[t] for t in c] for c, _ in PAIRS]),
              "positive": np.array([index[r] for _, r in PAIRS]),
              "negative": np.array([index[r] for _, r in PAIRS[1:] + PAIRS[:1]])}
    expected = [max(len(p["ids"]), len(n["ids"])) for p, n in zip(pos, neg)]
    assert row_lengths(texts, arrays, _Tokenizer(), 16).tolist() == expected
    assert builder.truncated > 0 and min(expected) < 24  # counted as cut, short ones as they are


def test_rade_loss_is_the_same_padded_to_the_batch_or_to_the_maximum():
    from dialeval.metrics.rade.data import Example
    from dialeval.metrics.rade.inputs import RadeInputBuilder
    from dialeval.metrics.rade.train import ExampleBatcher, row_lengths
    from dialeval.modeling.rade import RadeConfig, RadeModel

    builder = RadeInputBuilder(_Tokenizer(), max_seq_length=48, max_reference_length=12)
    examples = [Example(context=tuple(c), reference=r, candidate=PAIRS[(i + 1) % 4][1], reference_score=4.0,
                        candidate_score=2.0, source="chitchat", kind="annotated") for i, (c, r) in enumerate(PAIRS)]
    torch.manual_seed(0)
    model = RadeModel(RadeConfig(encoder_config=dict(TINY_ENCODER), regressor_dims=[16], max_seq_length=48,
                                 max_reference_length=12)).eval()
    batch = ExampleBatcher(builder, generation=True).collate(examples)
    inputs = builder.evaluator_inputs([e.context for e in examples], [e.reference for e in examples],
                                      [e.candidate for e in examples])
    fixed = {**batch, **builder.evaluator_batch(inputs, width=48)}
    assert batch["input_ids"].shape[1] < 48
    with torch.no_grad():
        a, b = (model(**{k: v for k, v in x.items() if k != "labels"}) for x in (batch, fixed))
    torch.testing.assert_close(a.scores, b.scores, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.generation_loss, b.generation_loss)
    # row_lengths: the evaluator's, the decoder context's and the labels' tokens of each example
    expected = (batch["attention_mask"].sum(1) + batch["context_attention_mask"].sum(1)
                + (batch["reference_labels"] >= 0).sum(1))
    assert row_lengths(builder, examples, generation=True).tolist() == expected.tolist()
    assert row_lengths(builder, examples, generation=False).tolist() == batch["attention_mask"].sum(1).tolist()
    assert builder.truncated == 0

"""GRADE training pieces that the recipe options switch: the losses, the validation figures, context copies."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from dialeval.modeling.grade import GradeOutput

from dialeval.metrics.grade.data import KINDS, PairTable, with_extra_negatives
from dialeval.metrics.grade.train import MARGIN, pair_loss, validation_metrics


def outputs(logits):
    logits = torch.tensor(logits, dtype=torch.float)
    return GradeOutput(score=torch.sigmoid(logits), logits=logits)


def test_pairwise_loss_ignores_a_shared_offset_pointwise_does_not():
    pos, neg = outputs([2.0, 1.5]), outputs([-2.0, -1.5])
    shifted_pos, shifted_neg = outputs([4.0, 3.5]), outputs([1.5, 1.0])  # every score pushed up: pairs still ordered
    assert pair_loss(pos, neg, "pairwise").item() == pytest.approx(0.0)
    assert pair_loss(shifted_pos, shifted_neg, "pairwise").item() == pytest.approx(0.0)
    # the pointwise term punishes negatives that score high in absolute terms
    assert pair_loss(shifted_pos, shifted_neg, "pointwise") > pair_loss(pos, neg, "pointwise") + 0.5
    both = pair_loss(shifted_pos, shifted_neg, "both")
    torch.testing.assert_close(both, pair_loss(shifted_pos, shifted_neg, "pairwise")
                               + pair_loss(shifted_pos, shifted_neg, "pointwise"))
    # margin: two equal scores cost exactly the margin
    assert pair_loss(outputs([0.0]), outputs([0.0]), "pairwise").item() == pytest.approx(MARGIN)


def test_pooled_auc_sees_what_pair_accuracy_does_not():
    # every pair ordered, but context 2's negative is above context 1's positive
    s_pos, s_neg = torch.tensor([0.3, 0.9]), torch.tensor([0.1, 0.5])
    m = validation_metrics(s_pos, s_neg)
    assert m["val_pair_accuracy"] == 1.0
    assert m["val_pooled_auc"] == pytest.approx(3 / 4)
    assert m["val_ranking_loss"] == pytest.approx(0.0)
    tie = validation_metrics(torch.tensor([0.5]), torch.tensor([0.5]))
    assert tie["val_pooled_auc"] == pytest.approx(0.5) and tie["val_pair_accuracy"] == 0.0


def test_extra_negatives_add_one_pair_per_positive_and_kind():
    from dialeval.metrics.grade.data import GradePair

    pairs = [GradePair(("a b", "c d"), "gold one", "lex one", "lexical"),
             GradePair(("a b", "c d"), "gold one", "emb one", "embedding"),
             GradePair(("e f", "g h"), "gold two", "lex two", "lexical"),
             GradePair(("e f", "g h"), "gold two", "emb two", "embedding"),
             GradePair(("i j", "k l"), "gold three", "lex three", "lexical")]
    table = PairTable.from_pairs({"train": pairs})
    arrays = with_extra_negatives(table.splits["train"], ["context_copy", "random"], seed=3)
    assert len(arrays["positive"]) == 5 + 3 + 3
    for key in ("context", "positive", "negative", "kind"):  # the original rows first, untouched
        assert np.array_equal(arrays[key][:5], table.splits["train"][key])
    added = [PairTable(table.texts, {"train": arrays}).pair("train", i) for i in range(5, 11)]
    assert [p.positive for p in added] == ["gold one", "gold two", "gold three"] * 2
    assert all(p.kind == "context_copy" and p.negative in p.context for p in added[:3])
    golds = {"gold one", "gold two", "gold three"}
    assert all(p.kind == "random" and p.negative in golds - {p.positive} for p in added[3:])
    again = with_extra_negatives(table.splits["train"], ["context_copy", "random"], seed=3)
    assert all(np.array_equal(arrays[k], again[k]) for k in arrays)
    assert KINDS[:2] == ("lexical", "embedding")  # prepared tables keep their kind indices
    with pytest.raises(ValueError, match="unknown extra negative kind 'bm25'"):
        with_extra_negatives(table.splits["train"], ["bm25"], seed=0)


def test_a_table_saved_with_fewer_kinds_still_loads(tmp_path):
    import gzip
    import json

    from dialeval.metrics.grade.data import TEXTS_FILE, GradePair

    table = PairTable.from_pairs({"train": [GradePair(("x",), "y", "z", "lexical")]})
    table.save(tmp_path)
    with gzip.open(tmp_path / TEXTS_FILE, "rt") as fh:
        doc = json.load(fh)
    doc["kinds"] = ["lexical", "embedding"]  # written before context copies existed
    with gzip.open(tmp_path / TEXTS_FILE, "wt") as fh:
        json.dump(doc, fh)
    assert PairTable.load(tmp_path).pair("train", 0).negative == "z"
    doc["kinds"] = ["embedding", "lexical"]
    with gzip.open(tmp_path / TEXTS_FILE, "wt") as fh:
        json.dump(doc, fh)
    with pytest.raises(ValueError, match="pair kinds"):
        PairTable.load(tmp_path)


def test_lexical_negatives_mid_rank_and_length_matched():
    from dialeval.metrics.grade.data import lexical_negatives

    query = "do you like green tea"
    pool = [query, "green tea", "tea", "do you like green tea in the morning with a lot of sugar and milk",
            "i like tea", "you like it"]
    plain = lexical_negatives([query], pool)
    assert plain[0] != query and plain[0] in pool
    matched = lexical_negatives([query], pool, length_window=50)
    assert matched[0] != query
    # the hit nearest five words among every hit (fewer than 50)
    hits = [t for t in pool[1:] if set(t.split()) & set(query.split())]
    gaps = [abs(len(t.split()) - 5) for t in hits]
    assert abs(len(matched[0].split()) - 5) == min(gaps)


def test_embedding_negatives_length_matched_among_the_most_similar():
    from dialeval.metrics.grade.data import embedding_negatives

    pool = ["a", "b c d e f", "g h", "i j k l m n o p", "q r s t"]
    query_emb = torch.tensor([[1.0, 0.0]])
    pool_emb = torch.tensor([[1.0, 0.1], [1.0, 0.2], [1.0, 0.3], [0.0, 1.0], [-1.0, 0.0]])
    first = embedding_negatives(["x y z w v"], pool, query_emb, pool_emb, top_k=3, seed=0)
    matched = embedding_negatives(["x y z w v"], pool, query_emb, pool_emb, top_k=3, seed=0, match_length=True)
    assert first[0] in pool[:3]
    assert matched == ["b c d e f"]  # five words, like the query, among the three most similar


def test_adapters_and_heads_learn_at_the_head_rate_pretrained_layers_do_not():
    from dialeval.metrics.grade.train import learns_at_head_rate

    assert learns_at_head_rate("scorer.weight") and learns_at_head_rate("gat_layers.0.att")
    assert learns_at_head_rate("encoder.encoder.layer.3.attention.self.query.lora_A")
    assert not learns_at_head_rate("encoder.encoder.layer.3.attention.self.query.weight")
    assert not learns_at_head_rate("encoder.embeddings.word_embeddings.weight")


def test_the_fast_settings_are_grades_defaults_and_each_can_be_turned_off(tmp_path):
    from dialeval.metrics.grade.options import GradeTrainingOptions
    from dialeval.training.options import TrainingOptionsError

    default = GradeTrainingOptions(output_dir=str(tmp_path))  # issue 38: docs/training.md, "The defaults"
    assert (default.length_buckets, default.frozen_cache, default.fused_optimizer) == (64, True, False)
    before = GradeTrainingOptions(output_dir=str(tmp_path), length_buckets=0, frozen_cache=False)
    assert (before.length_buckets, before.frozen_cache) == (0, False)
    on_disk = GradeTrainingOptions(output_dir=str(tmp_path), frozen_cache_dir=str(tmp_path / "states"))
    assert (on_disk.frozen_cache_dtype, default.frozen_cache_dir) == ("float32", None)
    with pytest.raises(TrainingOptionsError, match="--frozen-cache-dir .* --no-frozen-cache turns the cache off"):
        GradeTrainingOptions(output_dir=str(tmp_path), frozen_cache=False, frozen_cache_dir=str(tmp_path / "states"))
    with pytest.raises(TrainingOptionsError, match="frozen_cache_dtype must be one of 'float32', 'bfloat16'"):
        GradeTrainingOptions(output_dir=str(tmp_path), frozen_cache_dtype="float16")

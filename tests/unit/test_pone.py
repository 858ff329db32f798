"""PONE and BERT-RUBER: model code, EDA, weighted negatives, label filter, generation, training, scorers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT, run_without_dialeval, write_dailydialog
from conftest import TINY_DIALOGUES as DIALOGUES
from dialeval.modeling.bert_ruber import (
    BertRuberConfig,
    BertRuberModel,
    PoneConfig,
    PoneModel,
)

from dialeval import InputError
from dialeval.metrics.pone.eda import EdaAugmenter, GloveSynonyms, detokenize, tokenize
from dialeval.metrics.pone.label_filter import DROPPED, NEGATIVE, POSITIVE, LabelFilter
from dialeval.metrics.pone.sampling import WeightedNegativeSampler
from dialeval.schema import ScoringItem

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- EDA ----------------------------------------------------------------------------------------------------------

class FakeSynonyms:
    """A fixed synonym table (the interface EdaAugmenter uses: call + .stop)."""

    table = {"beach": ("shore", "coast"), "swimming": ("bathing",), "sea": ("ocean",), "love": ("adore",),
             "food": ("meal",)}
    stop = frozenset({"i", "the", "in", "a", "to", "and", "some", "you"})

    def __call__(self, word: str) -> tuple[str, ...]:
        return self.table.get(word.lower(), ())


TEXT = "I love swimming in the sea, and the beach!"


def eda(**kw) -> EdaAugmenter:
    return EdaAugmenter(FakeSynonyms(), **kw)


def test_tokenize_roundtrip_keeps_punctuation_and_contractions():
    assert tokenize("I don't know, John's car.") == ["I", "don't", "know", ",", "John's", "car", "."]
    assert detokenize(tokenize(TEXT)) == TEXT


def test_synonym_replacement_replaces_content_words_only():
    aug = eda(alpha_sr=1.0)
    tokens = tokenize(TEXT)
    out = aug.synonym_replacement(tokens, n=10, rng=np.random.default_rng(0))
    assert len(out) == len(tokens)
    for before, after in zip(tokens, out):
        if before.lower() in FakeSynonyms.stop or not before.isalpha():
            assert after == before  # stop words and punctuation are never replaced
        elif FakeSynonyms.table.get(before.lower()):
            assert after in FakeSynonyms.table[before.lower()]
    assert out != tokens
    one = aug.synonym_replacement(tokens, n=1, rng=np.random.default_rng(0))
    assert sum(a != b for a, b in zip(tokens, one)) == 1
    assert aug.synonym_replacement(["I", "Love", "the", "BEACH"], 5, np.random.default_rng(1))[1] == "Adore"


def test_stop_words_only_text_is_left_alone_by_replacement_and_insertion():
    aug = eda()
    tokens = tokenize("I and you to the")
    rng = np.random.default_rng(0)
    assert aug.synonym_replacement(tokens, 3, rng) == tokens
    assert aug.random_insertion(tokens, 3, rng) == tokens
    for text in eda(operations=["synonym_replacement", "random_insertion"]).augment(TEXT, 5, key=1):
        kept = [t for t in tokenize(text) if t.lower() in FakeSynonyms.stop]
        assert kept == [t for t in tokenize(TEXT) if t.lower() in FakeSynonyms.stop]


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(tok in it for tok in small)


def test_random_insertion_adds_synonyms_of_content_words():
    aug = eda()
    tokens = tokenize(TEXT)
    out = aug.random_insertion(tokens, 3, np.random.default_rng(2))
    assert len(out) == len(tokens) + 3 and _is_subsequence(tokens, out)
    inserted = list(out)
    for tok in tokens:
        inserted.remove(tok)
    synonyms = {s for syns in FakeSynonyms.table.values() for s in syns}
    assert set(inserted) <= synonyms


def test_random_swap_and_deletion_move_or_drop_words_only():
    aug = eda()
    tokens = tokenize(TEXT)
    swapped = aug.random_swap(tokens, 2, np.random.default_rng(3))
    assert sorted(swapped) == sorted(tokens) and swapped != tokens
    assert [t for t in swapped if not t[0].isalnum()] == [t for t in tokens if not t[0].isalnum()]
    assert [i for i, t in enumerate(swapped) if not t[0].isalnum()] == [
        i for i, t in enumerate(tokens) if not t[0].isalnum()]
    deleted = aug.random_deletion(tokens, 0.5, np.random.default_rng(4))
    assert _is_subsequence(deleted, tokens) and len(deleted) < len(tokens)
    assert [t for t in deleted if not t[0].isalnum()] == [",", "!"]  # punctuation is never deleted
    all_gone = aug.random_deletion(tokens, 1.0, np.random.default_rng(5))
    assert sum(t[0].isalnum() for t in all_gone) == 1  # one word always survives


def test_augment_is_deterministic_by_seed_and_key():
    first = eda(seed=3).augment(TEXT, 4, key=7)
    assert first == eda(seed=3).augment(TEXT, 4, key=7)
    assert len(first) == 4 and len(set(first)) == 4 and TEXT not in first
    assert first != eda(seed=3).augment(TEXT, 4, key=8) or first != eda(seed=4).augment(TEXT, 4, key=7)
    assert eda().augment("Hi", 3, key=0) == []  # no operation can change a one-word text without synonyms
    with pytest.raises(ValueError, match="operations"):
        EdaAugmenter(FakeSynonyms(), operations=["shuffle"])


def test_glove_synonyms_are_filtered_neighbours():
    syn = GloveSynonyms(threshold=0.8, max_synonyms=5, vocab_size=20_000)
    car = syn("car")
    assert "truck" in car and len(car) <= 5
    assert all(w.isalpha() and w not in syn.stop and w != "car" for w in car)
    assert syn("Car") == car  # looked up lower-cased
    assert GloveSynonyms(threshold=0.99, vocab_size=20_000)("car") == ()
    assert syn("qwxzzv") == ()  # not in GloVe


# -- weighted negatives -------------------------------------------------------------------------------------------

def _pool(n: int = 30, d: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_weighted_sampler_never_returns_the_gold():
    sampler = WeightedNegativeSampler(_pool(5), candidates=50, temperature=0.01)
    gold = np.repeat(np.arange(5), 200)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        assert not np.any(sampler.sample(gold, rng) == gold)
        assert not np.any(sampler.uniform(gold, rng) == gold)
        assert not np.any(sampler.draw_candidates(gold, rng) == gold[:, None])


def test_temperature_sharpens_or_flattens_the_distribution():
    pool = _pool()
    gold = np.array([0])
    cand = np.arange(1, 21)[None, :]
    unit = pool / np.linalg.norm(pool, axis=1, keepdims=True)
    sims = unit[cand[0]] @ unit[0]
    entropies = []
    for t in (0.01, 0.1, 1.0, 100.0):
        p = WeightedNegativeSampler(pool, candidates=20, temperature=t).probabilities(gold, cand)[0]
        assert p.sum() == pytest.approx(1.0) and np.argmax(p) == np.argmax(sims)
        assert np.all(np.diff(p[np.argsort(sims)]) >= -1e-12)  # more similar -> more likely
        entropies.append(-(p * np.log(p)).sum())
    assert entropies == sorted(entropies)  # higher temperature, flatter distribution
    assert entropies[-1] == pytest.approx(np.log(20), abs=1e-3)
    sharp = WeightedNegativeSampler(pool, candidates=20, temperature=0.01).probabilities(gold, cand)[0]
    assert sharp.max() > 0.9


def test_low_temperature_samples_hard_negatives():
    pool = _pool(200, 16, seed=1)
    unit = pool / np.linalg.norm(pool, axis=1, keepdims=True)
    gold = np.zeros(2000, dtype=np.int64)
    sims = unit @ unit[0]
    mean_sim = {}
    for t in (0.02, 10.0):
        neg = WeightedNegativeSampler(pool, candidates=50, temperature=t).sample(gold, np.random.default_rng(0))
        mean_sim[t] = sims[neg].mean()
    assert mean_sim[0.02] > mean_sim[10.0] + 0.2
    with pytest.raises(ValueError):
        WeightedNegativeSampler(pool, temperature=0)


# -- label filter -------------------------------------------------------------------------------------------------

def test_label_filter_states_and_fuzzy_process():
    scores = np.array([0.99, 0.01, 0.5, 0.96, 0.04, 0.3])
    drop = LabelFilter(6, fuzzy_threshold=0.05, fuzzy_process="drop")
    rnd = drop.relabel(scores)
    assert drop.labels.tolist() == [POSITIVE, NEGATIVE, DROPPED, POSITIVE, NEGATIVE, DROPPED]
    assert (rnd.positives, rnd.negatives, rnd.dropped, rnd.changed) == (2, 2, 2, 4)  # all started positive
    kept, labels = drop.training_set()
    assert kept.tolist() == [0, 1, 3, 4] and labels.tolist() == [1, 0, 1, 0]
    change = LabelFilter(6, fuzzy_threshold=0.05, fuzzy_process="change")
    change.relabel(scores)
    assert change.labels.tolist() == [1, 0, 1, 1, 0, 1]
    with pytest.raises(ValueError, match="probabilities"):
        LabelFilter(2).relabel(np.array([0.5, 1.5]))


def test_label_filter_iterates_until_labels_stop_changing():
    truth = np.array([1, 0, 1, 0, 1, 1, 0, 0], dtype=float)
    noise = np.array([-0.4, 0.45, -0.3, 0.2, 0.1, -0.45, 0.35, 0.05])

    def toy_scorer(round_number: int) -> np.ndarray:  # a model that gets surer every round
        return np.clip(truth + noise * 0.1 ** round_number, 0.0, 1.0)

    lf = LabelFilter(len(truth), fuzzy_threshold=0.05, max_rounds=20)
    while not lf.converged:
        lf.relabel(toy_scorer(len(lf.rounds)))
    changes = [r.changed for r in lf.rounds]
    assert lf.rounds[-1].reason == "stable" and changes == [7, 6, 0]
    assert lf.labels.tolist() == truth.astype(int).tolist()
    with pytest.raises(RuntimeError, match="converged"):
        lf.relabel(toy_scorer(0))
    capped = LabelFilter(len(truth), fuzzy_threshold=0.05, max_rounds=2)
    capped.relabel(toy_scorer(0))
    assert capped.relabel(toy_scorer(1)).reason == "max_rounds" and capped.converged
    replay = LabelFilter(len(truth), fuzzy_threshold=0.05, max_rounds=20)
    for saved in (LabelFilter(len(truth)).states(toy_scorer(i)) for i in range(len(lf.rounds))):
        replay.restore(saved)
    assert replay.rounds == lf.rounds


# -- generation-based augmentation --------------------------------------------------------------------------------

def _tiny_generators(root: Path) -> dict[str, Path]:
    from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration, GPT2Config, GPT2LMHeadModel

    from dialeval.backbone import default_encoder_path

    tok = AutoTokenizer.from_pretrained(default_encoder_path(), local_files_only=True)
    vocab, cls, sep, pad = len(tok), tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
    torch.manual_seed(0)
    models = {
        "causal": GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_positions=128, n_embd=16, n_layer=1, n_head=2,
                                             bos_token_id=cls, eos_token_id=sep, pad_token_id=pad)),
        "seq2seq": BartForConditionalGeneration(BartConfig(
            vocab_size=vocab, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=128,
            pad_token_id=pad, bos_token_id=cls, eos_token_id=sep, decoder_start_token_id=cls,
            forced_eos_token_id=None)),
    }
    paths = {}
    for kind, model in models.items():
        paths[kind] = root / kind
        model.save_pretrained(paths[kind])
        tok.save_pretrained(paths[kind])
    return paths


def test_generation_augmenter_with_tiny_random_models(tmp_path):
    from dialeval.metrics.pone.generation import GenerationAugmenter

    paths = _tiny_generators(tmp_path)
    context = ["Do you want to go to the beach?", "Sure, when?"]
    for kind, path in paths.items():
        gen = GenerationAugmenter(path, max_new_tokens=6, seed=1)
        assert gen.kind == kind
        out = gen.augment(context, gold="Sunday morning.", k=3, key=5)
        assert 1 <= len(out) <= 3 and all(isinstance(t, str) and t.strip() for t in out)
        assert len(set(out)) == len(out) and "Sunday morning." not in out
        assert gen.augment(context, gold="Sunday morning.", k=3, key=5) == out  # same seed and key
        stats = gen.stats
        assert stats["generated"] == 6 and stats["generated"] >= stats["empty"] + stats["duplicates"]
        assert gen.augment(context, gold="x", k=0, key=1) == []
    with pytest.raises(ValueError, match="top_p"):
        GenerationAugmenter(paths["causal"], top_p=0.0)


# -- model code ---------------------------------------------------------------------------------------------------

def test_configs_models_and_defaults():
    ruber, pone = BertRuberConfig(), PoneConfig()
    assert (ruber.model_type, ruber.activation, ruber.dropout) == ("dialeval-bert-ruber", "tanh", 0.0)
    assert (pone.model_type, pone.activation, pone.dropout) == ("dialeval-pone", "relu", 0.5)
    assert pone.hidden_dims == ruber.hidden_dims == [256, 512, 128] and pone.embedding_dim == 384
    assert PoneConfig(activation="tanh", dropout=0.1).activation == "tanh"
    with pytest.raises(ValueError, match="activation"):
        BertRuberConfig(activation="gelu")
    torch.manual_seed(0)
    model = PoneModel(PoneConfig(embedding_dim=6, hidden_dims=[5, 4])).eval()
    assert 0.0 <= model.bilinear.min() and model.bilinear.max() < 1.0  # U[0, 1) as the original
    c, r = torch.randn(3, 6), torch.randn(3, 6)
    out = model(c, r, labels=torch.tensor([1.0, 0.0, 0.7]))
    assert out.score.shape == (3,) and torch.all((out.score > 0) & (out.score < 1))
    torch.testing.assert_close(out.score, torch.sigmoid(out.logits))
    quad = ((c @ model.bilinear) * r).sum(-1)
    assert torch.allclose(model.features(c, r)[:, 6], quad)
    assert out.loss is not None and out.loss > 0
    with pytest.raises(ValueError, match="embedding"):
        model(torch.randn(3, 5), torch.randn(3, 5))


_LOAD_AND_SCORE = """
c, r = torch.load(args[0])
result = {"types": [], "scores": []}
for path in args[1:]:
    model = AutoModel.from_pretrained(path, trust_remote_code=True).eval()
    with torch.no_grad():
        result["scores"].append(model(c, r).score.tolist())
    result["types"].append([type(model).__name__, type(model).__module__, model.config.model_type])
"""


def test_save_load_and_trust_remote_code_without_dialeval(tmp_path):
    from transformers import AutoModel

    torch.manual_seed(3)
    models = {"ruber": BertRuberModel(BertRuberConfig(embedding_dim=8, hidden_dims=[6, 4])).eval(),
              "pone": PoneModel(PoneConfig(embedding_dim=8, hidden_dims=[6, 4])).eval()}
    c, r = torch.randn(4, 8), torch.randn(4, 8)
    torch.save((c, r), tmp_path / "inputs.pt")
    expected = []
    for name, model in models.items():
        model.save_pretrained(tmp_path / name)
        config = json.loads((tmp_path / name / "config.json").read_text())
        cls = type(model).__name__
        assert config["auto_map"] == {"AutoConfig": f"configuration_bert_ruber.{cls.replace('Model', 'Config')}",
                                      "AutoModel": f"modeling_bert_ruber.{cls}"}
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == [
            "config.json", "configuration_bert_ruber.py", "configuration_shared.py", "model.safetensors",
            "modeling_bert_ruber.py", "modeling_shared.py"]
        loaded = AutoModel.from_pretrained(tmp_path / name)
        assert type(loaded) is type(model) and not loaded.training
        with torch.no_grad():
            expected.append(model(c, r).score.tolist())
            assert loaded(c, r).score.tolist() == expected[-1]
    result = run_without_dialeval(_LOAD_AND_SCORE, tmp_path / "inputs.pt", tmp_path / "ruber", tmp_path / "pone",
                                  cwd=tmp_path)
    assert result["dialeval_loaded"] == []
    assert [t[0] for t in result["types"]] == ["BertRuberModel", "PoneModel"]
    assert all(t[1].startswith("transformers_modules") for t in result["types"])
    assert [t[2] for t in result["types"]] == ["dialeval-bert-ruber", "dialeval-pone"]
    assert result["scores"] == expected


# -- scorers ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def random_checkpoints(tmp_path_factory):
    """Untrained full-size heads (384-d, the bundled MiniLM's size) saved as checkpoints."""
    root = tmp_path_factory.mktemp("heads")
    torch.manual_seed(0)
    BertRuberModel(BertRuberConfig()).save_pretrained(root / "ruber")
    PoneModel(PoneConfig()).save_pretrained(root / "pone")
    return root


CONTEXTS = [d[:2] for d in DIALOGUES] + [["I failed my exam."], [{"role": "user", "content": "Any plans?"}]]
RESPONSES = [d[2] for d in DIALOGUES] + ["ok", "Not yet, maybe a walk."]
REFERENCES = [d[3] for d in DIALOGUES] + [["Sorry to hear that.", "Oh no."], "I might go hiking."]


def test_unreferenced_scores_are_bit_exact_across_batch_sizes(random_checkpoints):
    import dialeval

    for metric, folder in (("pone", "pone"), ("bert_ruber_unref", "ruber")):
        scorer = dialeval.load_scorer(metric, checkpoint=random_checkpoints / folder, device="cpu")
        outs = [scorer.score(contexts=CONTEXTS, responses=RESPONSES, batch_size=b).scores for b in (1, 3, 64)]
        assert outs[0] == outs[1] == outs[2]
        assert all(0.0 < s < 1.0 for s in outs[0])
        alone = scorer.score(contexts=CONTEXTS[2:4], responses=RESPONSES[2:4], batch_size=2).scores
        assert alone == outs[0][2:4]  # an item's score does not depend on its batch-mates
        fresh = dialeval.load_scorer(metric, checkpoint=random_checkpoints / folder, device="cpu")
        assert fresh.score(contexts=CONTEXTS, responses=RESPONSES, batch_size=5).scores == outs[0]
        out = scorer.score(contexts=CONTEXTS[:1], responses=RESPONSES[:1])
        assert out.signature.startswith(f"metric:{metric}|") and "checkpoint_sha256:" in out.signature
        assert out.metadata["mode"] == "unreferenced" and out.metadata["context_turns"] == 2


def test_hybrid_is_min_or_max_of_normalised_scores(random_checkpoints):
    """With min-max over the call (the original's normalisation, a named option); the default, ranges fixed in the
    checkpoint, is tested in test_ruber_normalization.py."""
    import dialeval

    def minmax(x):
        x = np.asarray(x)
        return (x - x.min()) / (x.max() - x.min())

    scorers = {h: dialeval.load_scorer("bert_ruber", checkpoint=random_checkpoints / "ruber", hybrid=h,
                                       normalization="minmax_over_call", device="cpu")
               for h in ("min", "max")}
    outs = {h: s.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES, batch_size=3)
            for h, s in scorers.items()}
    meta = outs["min"].metadata
    unref, ref = np.array(meta["unreferenced_scores"]), np.array(meta["referenced_scores"])
    unref_only = dialeval.load_scorer("bert_ruber_unref", checkpoint=random_checkpoints / "ruber", device="cpu")
    assert unref.tolist() == unref_only.score(contexts=CONTEXTS, responses=RESPONSES).scores
    assert np.all((ref >= -1) & (ref <= 1))
    np.testing.assert_allclose(outs["min"].scores, np.minimum(minmax(unref), minmax(ref)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(outs["max"].scores, np.maximum(minmax(unref), minmax(ref)), rtol=0, atol=1e-15)
    assert min(outs["min"].scores) == 0.0 and max(outs["max"].scores) == 1.0
    same = scorers["min"].score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES, batch_size=64)
    assert same.scores == outs["min"].scores
    # a reference equal to the response: cosine 1
    single = scorers["min"].referenced([ScoringItem(context=(), response="Hello there.",
                                                    references=("Hello there.",))], batch_size=1, progress_bar=False)
    assert single[0] == pytest.approx(1.0, abs=1e-12)
    pone_hybrid = dialeval.load_scorer("pone", checkpoint=random_checkpoints / "pone", mode="hybrid",
                                       normalization="minmax_over_call", device="cpu")
    assert pone_hybrid.requires_references
    assert len(pone_hybrid.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES).scores) == 8


def test_bad_inputs_raise_naming_item_and_field(random_checkpoints):
    import dialeval

    pone = dialeval.load_scorer("pone", checkpoint=random_checkpoints / "pone", device="cpu")
    with pytest.raises(InputError, match=r"contexts\[1\]"):
        pone.score(contexts=["Hi", ""], responses=["Hello", "Hey"])
    with pytest.raises(InputError, match=r"responses\[0\]"):
        pone.score(contexts=["Hi"], responses=[None])
    with pytest.raises(InputError, match=r"contexts\[0\]\[1\]"):
        pone.score(contexts=[["Hi", 3]], responses=["Hello"])
    ruber = dialeval.load_scorer("bert_ruber", checkpoint=random_checkpoints / "ruber", device="cpu")
    with pytest.raises(InputError, match="needs references"):
        ruber.score(contexts=["Hi"], responses=["Hello"])
    with pytest.raises(InputError, match=r"references\[1\]"):
        ruber.score(contexts=["Hi", "Yo"], responses=["Hello", "Hey"], references=["Hi!", []])
    ruber.set_hybrid("min", "minmax_over_call")
    with pytest.raises(InputError, match="minmax_over_call"):
        ruber.score(contexts=["Hi"], responses=["Hello"], references=["Hi!"])
    with pytest.raises(InputError, match="needs references"):
        ruber.score_dialogues(dialogues=[["Hi", "Hello"]])
    assert len(pone.score_dialogues(dialogues=[["Hi", "Hello", "How are you?"]]).scores) == 1
    with pytest.raises(ValueError, match="mode"):
        dialeval.load_scorer("pone", checkpoint=random_checkpoints / "pone", mode="both")
    with pytest.raises(FileNotFoundError, match="not a pone checkpoint"):
        dialeval.load_scorer("pone", checkpoint=random_checkpoints / "nowhere")


def test_missing_default_checkpoint_names_the_training_command(monkeypatch, tmp_path):
    from dialeval.metrics.bert_ruber import scorer as ruber_scorer
    from dialeval.metrics.pone.scorer import PoneScorer
    from dialeval.scoring import checkpoints

    monkeypatch.setattr(checkpoints.resources, "files", lambda pkg: tmp_path)
    with pytest.raises(FileNotFoundError, match="dialeval train bert-ruber"):
        ruber_scorer.BertRuberUnrefScorer()

    with pytest.raises(FileNotFoundError, match="dialeval train pone"):
        PoneScorer()


def test_evaluate_modules_match_the_scorers(random_checkpoints):
    import evaluate

    import dialeval

    contexts = [["Want to get lunch?", "Yes, I'm starving."], ["I lost my keys."], ["Any plans tonight?"]]
    predictions = ["Great, the pizza place opens at noon.", "Bananas are yellow.", "A movie, maybe."]
    references = [["Let's go to the cafe."], ["Did you check your coat?"], ["Not yet.", "I might read."]]
    pone = evaluate.load(str(ROOT / "metrics" / "pone"), config_name=str(random_checkpoints / "pone"))
    res = pone.compute(predictions=predictions, contexts=contexts)
    direct = dialeval.load_scorer("pone", checkpoint=random_checkpoints / "pone").score(
        contexts=contexts, responses=predictions)
    assert res["scores"] == direct.scores and res["signature"] == direct.signature
    assert res["mean_score"] == pytest.approx(direct.system_score)
    ruber = evaluate.load(str(ROOT / "metrics" / "bert_ruber"), config_name=str(random_checkpoints / "ruber"))
    for hybrid in ("min", "max"):
        res = ruber.compute(predictions=predictions, contexts=contexts, references=references, hybrid=hybrid,
                            normalization="minmax_over_call")
        direct = dialeval.load_scorer("bert_ruber", checkpoint=random_checkpoints / "ruber", hybrid=hybrid,
                                      normalization="minmax_over_call").score(
            contexts=contexts, responses=predictions, references=references)
        assert res["scores"] == direct.scores and res["signature"] == direct.signature
    with pytest.raises(ValueError, match="no hybrid normalisation ranges"):  # the default needs them in the checkpoint
        ruber.compute(predictions=predictions, contexts=[c[-1] for c in contexts],
                      references=[r[0] for r in references])
    with pytest.raises(ValueError, match="hybrid"):
        ruber.compute(predictions=predictions, contexts=contexts, references=references, hybrid="mean")


class FakeEncoder:
    display_name, fingerprint, max_length, hidden_size = "fake", "abc", 16, 3

    def __init__(self):
        self.calls = []

    def embed(self, texts, *, batch_size, side, progress_bar):
        self.calls.append(list(texts))
        return torch.tensor([[len(t), t.count("a"), 1.0 if side == "left" else 0.0] for t in texts])


def test_embedding_store_appends_chunks_and_resumes(tmp_path):
    from dialeval.backbone.store import EmbeddingStore

    enc = FakeEncoder()
    store = EmbeddingStore(tmp_path / "s", enc, side="left", chunk_size=2)
    stats = store.ensure(["aa", "b", "aa", "cab", "d"], progress_bar=False)
    assert stats["encoded"] == 4 and enc.calls == [["aa", "b"], ["cab", "d"]]
    assert store.vectors(["cab", "aa"]).tolist() == [[3, 1, 1], [2, 2, 1]]
    np.save(tmp_path / "s" / "chunk_00002.npy", np.zeros((2, 3), np.float32))  # interrupted: no text list
    again = EmbeddingStore(tmp_path / "s", enc, side="left", chunk_size=2)
    assert len(again) == 4 and again.ensure(["d", "e"], progress_bar=False)["encoded"] == 1
    assert enc.calls[-1] == ["e"] and again.vectors(["e"]).tolist() == [[1, 0, 1]]
    with pytest.raises(ValueError, match="other encoder settings"):
        EmbeddingStore(tmp_path / "s", enc, side="right")
    with pytest.raises(KeyError, match="not in embedding store"):
        again.rows(["never seen"])


def test_embedding_store_shared_by_two_writers_keeps_both(tmp_path):
    from dialeval.backbone.store import EmbeddingStore

    first = EmbeddingStore(tmp_path / "s", FakeEncoder(), side="left", chunk_size=2)
    second = EmbeddingStore(tmp_path / "s", FakeEncoder(), side="left", chunk_size=2)  # opened before any write
    second.ensure(["aa", "b"], progress_bar=False)
    stats = first.ensure(["b", "cab"], progress_bar=False)
    assert stats["encoded"] == 1  # "b" was written by the other store in the meantime
    assert first.vectors(["aa", "cab"]).tolist() == [[2, 2, 1], [3, 1, 1]]
    fresh = EmbeddingStore(tmp_path / "s", FakeEncoder(), side="left", chunk_size=2)
    assert len(fresh) == 3 and fresh.vectors(["aa", "b", "cab"]).tolist() == [[2, 2, 1], [1, 0, 1], [3, 1, 1]]


def test_augmentation_cache_resumes_after_a_cut_line(tmp_path):
    from dialeval.metrics.bert_ruber.data import Pair
    from dialeval.metrics.pone.augmentation import augment_pairs, read_augmented

    pairs = [Pair(("hi",), f"response {i}") for i in range(4)]
    seen = []

    def fake(pair, k, key):
        seen.append(key)
        if key == stop_at:
            raise KeyboardInterrupt
        return [f"{pair.response} v{j}" for j in range(k)]

    stop_at = 2
    with pytest.raises(KeyboardInterrupt):  # interrupted after two pairs
        augment_pairs(pairs[:3], fake, k=2, folder=tmp_path, meta={"augmenter": "fake"})
    path = tmp_path / "augmented.jsonl"
    assert len(path.read_text().splitlines()) == 2 and not (tmp_path / "augmented.jsonl.gz").exists()
    path.write_text(path.read_text()[:-10])  # and the last line was cut
    with pytest.raises(ValueError, match="other augmentation settings"):
        augment_pairs(pairs, fake, k=2, folder=tmp_path, meta={"augmenter": "fake"})  # 4 pairs now: other run
    seen.clear()
    stop_at = None
    owners, texts, stats = augment_pairs(pairs[:3], fake, k=2, folder=tmp_path, meta={"augmenter": "fake"})
    assert seen == [1, 2] and len(texts) == 6 and stats["per_pair_histogram"] == [0, 0, 3]
    assert owners.tolist() == [0, 0, 1, 1, 2, 2] and texts[2] == "response 1 v0"
    # finished: the lines moved to the compact file, which training reads without an augmenter
    assert not path.exists() and (tmp_path / "augmented.jsonl.gz").exists()
    again = read_augmented(tmp_path)
    assert again[0].tolist() == owners.tolist() and again[1] == texts
    assert again[2]["per_pair_histogram"] == stats["per_pair_histogram"]
    seen.clear()
    assert augment_pairs(pairs[:3], fake, k=2, folder=tmp_path, meta={"augmenter": "fake"})[1] == texts
    assert seen == []  # nothing redone


# -- training -----------------------------------------------------------------------------------------------------

def _write_dailydialog(root: Path) -> Path:
    return write_dailydialog(root, {"train": DIALOGUES * 2, "validation": DIALOGUES[:3], "test": DIALOGUES[3:]})


@pytest.fixture(scope="module")
def fixture_data(tmp_path_factory):
    return _write_dailydialog(tmp_path_factory.mktemp("data"))


def test_bert_ruber_training_command_writes_best(fixture_data, tmp_path):
    from typer.testing import CliRunner

    from dialeval.cli import app

    out = tmp_path / "ruber"
    args = ["train", "bert-ruber", "--output-dir", str(out), "--data-dir", str(fixture_data), "--epochs", "2",
            "--batch-size", "8", "--max-val-positives", "12", "--device", "cpu", "--threads", "1"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    for name in ("config.json", "model.safetensors", "modeling_bert_ruber.py", "configuration_bert_ruber.py"):
        assert (out / "best" / name).exists(), name
    assert (out / "best" / "model.safetensors").stat().st_size < 3_000_000  # the head only
    assert _stored_dtypes(out / "best") == {torch.float16}  # stored at shipped size; the scorer computes in float64
    summary = json.loads((out / "summary.json").read_text())
    assert summary["train_positives"] == 24 and summary["steps"] == 6  # 24 pairs (duplicates removed), 3 steps/epoch
    evals = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if '"eval"' in x]
    assert [e["step"] for e in evals] == [3, 6]
    again = CliRunner().invoke(app, args)  # finished run: resumes and does nothing more
    assert again.exit_code == 0 and len((out / "log.jsonl").read_text().splitlines()) == 4
    import dialeval

    scorer = dialeval.load_scorer("bert_ruber_unref", checkpoint=out, device="cpu")
    assert scorer.checkpoint == out / "best" and scorer.model.config.context_turns == 2
    assert {p.dtype for p in scorer.model.parameters()} == {torch.float64}  # the scorer's head runs in float64


def _stored_dtypes(folder: Path) -> set:
    from safetensors.torch import load_file

    return {t.dtype for t in load_file(folder / "model.safetensors").values()}


def test_pone_training_two_stages_label_filter_and_resume(fixture_data, tmp_path):
    from dialeval.metrics.pone.train import PoneTrainingOptions, run, variant_name

    out = tmp_path / "pone"
    opts = PoneTrainingOptions(output_dir=str(out), data_dir=str(fixture_data), max_val_positives=12, k=1, epochs=1,
                               stage2_epochs=2, relabel_every=1, batch_size=8, candidates=10, temperature=0.1,
                               fuzzy_threshold=0.5, max_filter_rounds=10, filter_tolerance=-1, device="cpu",
                               threads=1, progress_bar=False)
    summary = run(opts)
    assert summary["variant"] == variant_name(opts) == "PONE"
    assert 0 < summary["augmented_positives"] <= 24
    assert set(summary["stages"]) == {"stage1", "stage2"}
    assert summary["stages"]["stage1"]["steps"] == (24 + summary["augmented_positives"]) // 8
    assert (out / "stage1" / "best" / "config.json").exists() and (out / "best" / "model.safetensors").exists()
    # stage 2 starts from stage 1's best, kept in float32; the final checkpoint is stored in float16
    assert _stored_dtypes(out / "stage1" / "best") == {torch.float32}
    assert _stored_dtypes(out / "best") == {torch.float16}
    config = json.loads((out / "best" / "config.json").read_text())
    assert config["model_type"] == "dialeval-pone" and "label filter" in config["training_recipe"]
    rounds = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if '"label_filter"' in x]
    assert [r["round"] for r in rounds] == [0, 1] and rounds[0]["changed"] >= 0
    assert all(r["positives"] + r["negatives"] + r["dropped"] == summary["augmented_positives"] for r in rounds)
    assert (out / "label_filter" / "round_00.npz").exists()
    # resume with one more epoch: rounds 0-1 are replayed from disk, round 2 is new
    opts.stage2_epochs = 3
    more = run(opts)
    rounds = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if '"label_filter"' in x]
    assert [r["round"] for r in rounds] == [0, 1, 2]
    assert [r["round"] for r in more["label_filter_rounds"]] == [0, 1, 2]
    assert more["stages"]["stage2"]["steps"] == 9
    aug_lines = gzip.decompress((out / "augmentation" / "augmented.jsonl.gz").read_bytes()).decode().splitlines()
    assert len(aug_lines) == 24 and not (out / "augmentation" / "augmented.jsonl").exists()  # not redone
    import dialeval

    scores = dialeval.load_scorer("pone", checkpoint=out / "best", device="cpu").score(
        contexts=CONTEXTS, responses=RESPONSES).scores
    assert all(0.0 < s < 1.0 for s in scores)


def test_pone_ablation_flags(fixture_data, tmp_path):
    from dialeval.metrics.pone.train import PoneTrainingOptions, run, variant_name

    base = dict(data_dir=str(fixture_data), max_val_positives=12, epochs=1, batch_size=8, candidates=10,
                device="cpu", threads=1, progress_bar=False, embedding_dir=str(tmp_path / "shared_embeddings"))
    po_lf = PoneTrainingOptions(output_dir=str(tmp_path / "po_lf"), augment=False, label_filter=False, **base)
    summary = run(po_lf)
    assert variant_name(po_lf) == "PONE-Po-LF" and summary["augmented_positives"] == 0
    assert set(summary["stages"]) == {"single"} and summary["stages"]["single"]["steps"] == 3
    ne_lf = PoneTrainingOptions(output_dir=str(tmp_path / "ne_lf"), label_filter=False, weighted_negatives=False,
                                k=1, **base)
    assert variant_name(ne_lf) == "PONE-Ne-LF"
    assert run(ne_lf)["augmented_positives"] > 0
    assert not (tmp_path / "ne_lf" / "embeddings").exists()  # the shared store was used
    assert variant_name(PoneTrainingOptions(output_dir="x", weighted_negatives=False)) == "PONE-Ne"
    with pytest.raises(ValueError, match="needs augment"):
        run(PoneTrainingOptions(output_dir=str(tmp_path / "bad"), augment=False, **base))
    with pytest.raises(ValueError, match="generator"):
        run(PoneTrainingOptions(output_dir=str(tmp_path / "bad2"), augmenter="generate", **base))



def test_with_corrupted_appends_labelled_negatives_to_every_batch():
    from dialeval.metrics.bert_ruber.train import batch_dict
    from dialeval.metrics.pone.train import with_corrupted

    def two_batches(epoch):
        for b in range(2):
            yield batch_dict(np.full((4, 3), b), np.full((4, 3), b), np.ones(4, np.float32))

    context, response = np.arange(15, dtype=np.float32).reshape(5, 3), -np.arange(15, dtype=np.float32).reshape(5, 3)
    batches = list(with_corrupted(two_batches, context, response, batch_size=4, seed=0)(0))
    assert [len(b["labels"]) for b in batches] == [8, 8]
    assert all(b["labels"][4:].sum() == 0 and b["labels"][:4].sum() == 4 for b in batches)
    extra = np.concatenate([b["context"][4:].numpy() for b in batches])
    rows = [int(r[0]) // 3 for r in extra]
    assert sorted(rows[:5]) == [0, 1, 2, 3, 4]  # every corrupted copy before any comes twice
    assert all((b["response"][4:].numpy() == -b["context"][4:].numpy()).all() for b in batches)  # rows stay paired


def test_pone_synonym_positives_and_corrupted_negatives(fixture_data, tmp_path):
    from dialeval.metrics.bert_ruber.train import prepared_pairs
    from dialeval.metrics.pone.augmentation import read_augmented
    from dialeval.metrics.pone.eda import tokenize
    from dialeval.metrics.pone.train import PoneTrainingOptions, run

    out = tmp_path / "pone"
    opts = PoneTrainingOptions(output_dir=str(out), data_dir=str(fixture_data), max_val_positives=12, epochs=1,
                               batch_size=8, candidates=10, label_filter=False, eda_operations="synonyms",
                               corrupted_negatives=1, device="cpu", threads=1, progress_bar=False)
    summary = run(opts)
    assert "EDA synonym replacement only" in summary["recipe"] and "1 corrupted negatives" in summary["recipe"]
    pairs, _ = prepared_pairs(out)
    owners, texts, _ = read_augmented(out / "augmentation")
    for owner, text in zip(owners, texts):  # a synonym swapped in, the token count unchanged
        assert len(tokenize(text)) == len(tokenize(pairs[owner].response)) and text != pairs[owner].response
    owners, bad, _ = read_augmented(out / "corruption")
    assert summary["corrupted_negatives"] == len(bad) > 0
    for owner, text in zip(owners, bad):  # words swapped or deleted, never new ones
        assert set(tokenize(text)) <= set(tokenize(pairs[owner].response)) and text != pairs[owner].response
    # the corrupted copies ride along with the positives: they add no steps
    assert summary["stages"]["single"]["steps"] == (24 + summary["augmented_positives"]) // 8

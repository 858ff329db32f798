"""The RUBER-style hybrid score's fixed normalisation: ranges fitted on validation data at training time, stored in
the checkpoint, applied item by item (dialeval.metrics.bert_ruber.ranges / .calibration, and the command in
.normalization); the truncation count of the RUBER-style scorers; the package's import order."""

from __future__ import annotations

import ast
import hashlib
import json
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.modeling.bert_ruber import (
    BertRuberConfig,
    BertRuberModel,
    PoneConfig,
    PoneModel,
)

from dialeval.metrics.bert_ruber.calibration import calibration_ranges
from dialeval.metrics.bert_ruber.ranges import TAIL, MissingCalibration, fit_range, rescale, row_cosines

CONTEXTS = [["Do you want to go to the beach on Sunday?", "Sure, I love swimming."], ["I need a new phone."],
            ["Can you help me cook dinner?"], ["My dog is sick today."], ["Let us watch a movie tonight."],
            ["The train is late again."]]
RESPONSES = ["Bring a towel and some food.", "What happened to your old one?", "Of course, what are we making?",
             "Bananas are yellow.", "Which movie do you want to see?", "ok"]
REFERENCES = ["I will bring sandwiches.", "Buy a waterproof phone.", "A soup with vegetables.",
              "Did you take him to the doctor?", "A funny one.", ["How long do we wait?", "Let us get a coffee."]]
UNREF_RANGE, REF_RANGE = [0.495, 0.51], [0.15, 0.4]  # narrow on purpose: some items fall below or above them


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    """Untrained 384-d heads (the bundled MiniLM's size): with ranges, without (an old checkpoint), and PONE's."""
    root = tmp_path_factory.mktemp("heads")
    torch.manual_seed(0)
    ranges = {"hybrid_unreferenced_range": UNREF_RANGE, "hybrid_referenced_range": REF_RANGE,
                  "hybrid_calibration": "test ranges"}
    model = BertRuberModel(BertRuberConfig(**ranges))
    model.save_pretrained(root / "calibrated")
    old = BertRuberModel(BertRuberConfig())
    old.load_state_dict(model.state_dict())
    old.save_pretrained(root / "old")
    PoneModel(PoneConfig(**ranges)).save_pretrained(root / "pone")
    return root


def _tails(t: np.ndarray) -> np.ndarray:
    """The documented map on t = (s - low) / (high - low), written out independently of the code under test."""
    out = t.copy()
    for i, v in enumerate(t):
        if v < 0:
            out[i] = v / (1 + abs(v) / 0.05)
        elif v > 1:
            out[i] = 1 + (v - 1) / (1 + (v - 1) / 0.05)
    return out


def test_rescale_is_the_old_map_inside_the_range():
    """Inside [low, high] the numbers are those of the earlier clipped map, bit for bit, so every figure measured
    where nothing was clipped stays as it was."""
    for low, high in [(0.2, 0.6), (-0.16322865879240245, 0.9704977703671431), (2.98e-43, 0.9954751829479463)]:
        inside = np.concatenate([[low, high], np.linspace(low, high, 1001),
                                 low + (high - low) * np.logspace(-30, 0, 50)])
        inside = inside[(inside >= low) & (inside <= high)]
        clipped = np.clip((inside - low) / (high - low), 0.0, 1.0)
        np.testing.assert_array_equal(rescale(inside, (low, high)), clipped)
    assert rescale(np.array([0.3]), (0.2, 0.6))[0] == pytest.approx(0.25, abs=1e-15)


@pytest.mark.parametrize("low,high", [(0.2, 0.6), (-0.16322865879240245, 0.9704977703671431),
                                      (0.006350278268239807, 0.9920680184955445)])
def test_rescale_keeps_the_order_outside_the_range(low, high):
    """Issue 36: below and above the range the map is strictly increasing and bounded instead of clipping, so no two
    different scores tie; it meets the linear part without a jump."""
    below = np.sort(np.concatenate([low - np.logspace(-12, 6, 200), [-1.0, low - 1e-9]]))
    above = np.sort(np.concatenate([high + np.logspace(-12, 6, 200), [1.0, high + 1e-9]]))
    below, above = np.unique(below[below < low]), np.unique(above[above > high])
    for side, values in (("below", below), ("above", above)):
        mapped = rescale(values, (low, high))
        assert np.all(np.diff(mapped) > 0), f"ties or reversals {side} the range"
        np.testing.assert_allclose(mapped, _tails((values - low) / (high - low)), rtol=1e-12, atol=0)
    lower, upper = rescale(below, (low, high)), rescale(above, (low, high))
    assert np.all((-TAIL < lower) & (lower < 0.0)) and np.all((1.0 < upper) & (upper < 1.0 + TAIL))
    assert lower[-1] == pytest.approx(0.0, abs=1e-8) and upper[0] == pytest.approx(1.0, abs=1e-8)  # continuous
    everything = np.concatenate([below, np.linspace(low, high, 101), above])
    assert np.all(np.diff(rescale(everything, (low, high))) > 0)


def test_rescale_separates_pone_scores_far_below_its_range():
    """PONE's stored unreferenced range starts at 3e-43 and its head gives nonsense replies probabilities such as
    1e-57, which the clipped map all sent to exactly 0."""
    low, high = 2.9819420333009057e-43, 0.9954751829479463
    raw = np.array([0.0, 1e-57, 5e-55, 1e-50, 1e-45, 2.9e-43, low, 1e-40, 1e-20])
    mapped = rescale(raw, (low, high))
    assert np.all(np.diff(mapped) > 0)
    assert np.all(mapped[:6] < 0.0) and mapped[6] == 0.0 and np.all(mapped[7:] > 0.0)
    assert np.count_nonzero(np.clip((raw - low) / (high - low), 0, 1) == 0.0) == 7  # what the clip tied


def test_fit_range_needs_spread():
    assert fit_range(np.array([0.3, -0.1, 0.7]), "x") == (-0.1, 0.7)
    with pytest.raises(ValueError, match="all 0.5"):
        fit_range(np.array([0.5, 0.5]), "unreferenced")
    with pytest.raises(ValueError, match="finite"):
        fit_range(np.array([0.1, np.nan]), "referenced")
    with pytest.raises(ValueError, match="hybrid_referenced_range"):
        BertRuberConfig(hybrid_referenced_range=[0.5, 0.2])


def test_calibrated_hybrid_scores_each_item_on_its_own(heads):
    import dialeval

    scorers = {h: dialeval.load_scorer("bert_ruber", checkpoint=heads / "calibrated", hybrid=h, device="cpu")
               for h in ("min", "max")}
    together = scorers["min"].score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES, batch_size=4)
    meta = together.metadata
    unref, ref = np.array(meta["unreferenced_scores"]), np.array(meta["referenced_scores"])
    assert meta["normalization"] == "calibrated" and meta["referenced_range"] == REF_RANGE
    t_unref = (unref - UNREF_RANGE[0]) / (UNREF_RANGE[1] - UNREF_RANGE[0])
    t_ref = (ref - REF_RANGE[0]) / (REF_RANGE[1] - REF_RANGE[0])
    for t in (t_unref, t_ref):  # both tails are exercised, and so is the range
        assert t.min() < 0 and t.max() > 1 and np.any((t > 0) & (t < 1))
    unref_n, ref_n = _tails(t_unref), _tails(t_ref)
    np.testing.assert_allclose(together.scores, np.minimum(unref_n, ref_n), rtol=0, atol=1e-15)
    maxed = scorers["max"].score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES)
    np.testing.assert_allclose(maxed.scores, np.maximum(unref_n, ref_n), rtol=0, atol=1e-15)
    for i in range(len(RESPONSES)):  # alone, and among other items in another order
        alone = scorers["min"].score(contexts=CONTEXTS[i:i + 1], responses=RESPONSES[i:i + 1],
                                     references=REFERENCES[i:i + 1], batch_size=1)
        assert alone.scores == [together.scores[i]]
    order = [5, 2, 0, 4, 1, 3]
    shuffled = scorers["min"].score(contexts=[CONTEXTS[i] for i in order], responses=[RESPONSES[i] for i in order],
                                    references=[REFERENCES[i] for i in order], batch_size=64)
    assert shuffled.scores == [together.scores[i] for i in order]
    assert "normalization:calibrated|tails:0.05" in together.signature  # tells these scores from the clipped ones
    pone = dialeval.load_scorer("pone", checkpoint=heads / "pone", mode="hybrid", device="cpu")
    one = pone.score(contexts=CONTEXTS[:1], responses=RESPONSES[:1], references=REFERENCES[:1])
    assert -TAIL < one.scores[0] < 1.0 + TAIL and one.metadata["unreferenced_range"] == UNREF_RANGE


def test_checkpoint_without_ranges_raises_and_names_the_command(heads):
    import dialeval

    old = dialeval.load_scorer("bert_ruber", checkpoint=heads / "old", device="cpu")
    with pytest.raises(MissingCalibration, match=r"`dialeval checkpoint calibrate --checkpoint .*old`"):
        old.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES)
    unref = dialeval.load_scorer("bert_ruber_unref", checkpoint=heads / "old", device="cpu")
    assert len(unref.score(contexts=CONTEXTS, responses=RESPONSES).scores) == len(RESPONSES)  # needs no ranges
    # the original behaviour, by its own name: min-max over the call, so an item depends on its batch-mates
    old.set_hybrid("min", "minmax_over_call")
    out = old.score(contexts=CONTEXTS, responses=RESPONSES, references=REFERENCES)
    u, r = np.array(out.metadata["unreferenced_scores"]), np.array(out.metadata["referenced_scores"])
    expected = np.minimum((u - u.min()) / (u.max() - u.min()), (r - r.min()) / (r.max() - r.min()))
    np.testing.assert_allclose(out.scores, expected, rtol=0, atol=1e-15)
    pair = old.score(contexts=CONTEXTS[:2], responses=RESPONSES[:2], references=REFERENCES[:2]).scores
    assert set(pair) <= {0.0, 1.0} and pair != out.scores[:2]  # two items: each part is 0 or 1
    with pytest.raises(ValueError, match="normalization must be one of"):
        old.set_hybrid("min", "minmax")


def test_calibration_ranges_leave_out_the_gold_reply_against_itself():
    torch.manual_seed(1)
    head = BertRuberModel(BertRuberConfig(embedding_dim=6, hidden_dims=[5])).to(torch.float64)
    rng = np.random.default_rng(0)
    n = 5
    contexts = rng.normal(size=(n, 6)).astype(np.float32)
    gold, negatives = rng.normal(size=(n, 6)).astype(np.float32), rng.normal(size=(n, 6)).astype(np.float32)
    val_context, val_response = np.concatenate([contexts, contexts]), np.concatenate([gold, negatives])
    ranges = calibration_ranges(head, val_context, val_response, "synthetic")
    with torch.no_grad():
        scores = head(context_embeds=torch.from_numpy(val_context).double(),
                      response_embeds=torch.from_numpy(val_response).double()).score.numpy()
    assert ranges.unreferenced == (scores.min(), scores.max())
    cosines = [float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b)) for a, b in
               zip(negatives.astype(np.float64), gold.astype(np.float64))]
    assert ranges.referenced == pytest.approx((min(cosines), max(cosines)), abs=1e-12)
    assert ranges.referenced[1] < 0.999  # the gold reply's own cosine (1) is not part of the range
    assert row_cosines(np.zeros((1, 3)), np.ones((1, 3)))[0] == 0.0
    with pytest.raises(ValueError, match="n contexts twice"):
        calibration_ranges(head, val_context[:3], val_response[:3], "odd")


# -- training and the command ----------------------------------------------------------------------------------

DIALOGUES = [
    ["Do you want to go to the beach on Sunday?", "Sure, I love swimming in the sea.", "Bring a towel and some food.",
     "I will bring sandwiches and water."],
    ["I need to buy a new phone.", "What happened to your old phone?", "I dropped it in the water.",
     "You should buy a waterproof phone."],
    ["Can you help me cook dinner?", "Of course, what are we making?", "A chicken soup with vegetables.",
     "I will cut the carrots."],
    ["My dog is sick today.", "Did you take him to the doctor?", "Yes, he gave him medicine.", "I hope he gets well."],
]


@pytest.fixture(scope="module")
def tiny_dailydialog(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    folder = root / "dailydialog" / "derived"
    folder.mkdir(parents=True)
    for split, dialogues in (("train", DIALOGUES * 4), ("validation", DIALOGUES[:3]), ("test", DIALOGUES[3:])):
        lines = [json.dumps({"dialogue_id": f"{split}-{i}", "original_id": f"{split}-{i}", "topic": "t",
                             "utterances": turns, "acts": ["inform"] * len(turns),
                             "emotions": ["no emotion"] * len(turns)}) for i, turns in enumerate(dialogues)]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_training_stores_the_ranges_and_the_command_recomputes_them(tiny_dailydialog, tmp_path):
    import dialeval
    from dialeval.metrics.bert_ruber.train import HeadTrainingOptions, run

    out = tmp_path / "ruber"
    run(HeadTrainingOptions(output_dir=str(out), data_dir=str(tiny_dailydialog), max_val_positives=6, epochs=1,
                            batch_size=8, seed=3, device="cpu", threads=1, progress_bar=False))
    best = out / "best"
    config = json.loads((best / "config.json").read_text())
    unref_range, ref_range = config["hybrid_unreferenced_range"], config["hybrid_referenced_range"]
    assert 0.0 < unref_range[0] < unref_range[1] < 1.0 and -1.0 <= ref_range[0] < ref_range[1] < 1.0
    assert "6 contexts (seed 3)" in config["hybrid_calibration"]
    scorer = dialeval.load_scorer("bert_ruber", checkpoint=out, device="cpu")
    assert scorer.hybrid_ranges().unreferenced == tuple(unref_range)

    # an "old" checkpoint: the same weights without the ranges; the command adds them back, touching nothing else
    for key in ("hybrid_unreferenced_range", "hybrid_referenced_range", "hybrid_calibration"):
        config.pop(key)
    (best / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    weights = _sha256(best / "model.safetensors")
    res = CliRunner().invoke(app, ["checkpoint", "calibrate", "--checkpoint", str(best), "--data-dir",
                                   str(tiny_dailydialog), "--seed", "3", "--max-val-positives", "6"])
    assert res.exit_code == 0, res.output
    again = json.loads((best / "config.json").read_text())
    assert again["hybrid_unreferenced_range"] == pytest.approx(unref_range, abs=1e-12)
    assert again["hybrid_referenced_range"] == pytest.approx(ref_range, abs=1e-12)
    assert {k: v for k, v in again.items() if not k.startswith("hybrid_")} == config
    assert _sha256(best / "model.safetensors") == weights
    printed = json.loads(res.stdout)  # what it wrote
    assert set(printed) == {"hybrid_unreferenced_range", "hybrid_referenced_range", "hybrid_calibration"}
    assert printed == {k: again[k] for k in printed}


@pytest.mark.parametrize("metric", ["bert_ruber", "pone"])
def test_shipped_checkpoints_carry_the_ranges(metric):
    import dialeval

    scorer = dialeval.load_scorer(metric, mode="hybrid", device="cpu")
    ranges = scorer.hybrid_ranges()
    assert 0.0 <= ranges.unreferenced[0] < ranges.unreferenced[1] <= 1.0
    assert -1.0 <= ranges.referenced[0] < ranges.referenced[1] <= 1.0
    assert "DailyDialog validation, 1000 contexts (seed 11)" in ranges.calibration


# -- truncation count ------------------------------------------------------------------------------------------


def test_truncated_texts_counts_the_distinct_inputs_longer_than_the_encoder_limit(heads):
    """Each call reports in ``truncated_texts`` how many distinct texts it encodes were cut: contexts, responses
    and references, those its mode reads, a text used twice counted once."""
    import dialeval

    hybrid = dialeval.load_scorer("bert_ruber", checkpoint=heads / "calibrated", device="cpu")
    tokenizer, limit = hybrid.encoder.tokenizer, hybrid.encoder.max_length
    at_limit, over = " ".join(["word"] * (limit - 2)), " ".join(["word"] * (limit - 1))
    assert [len(tokenizer(t)["input_ids"]) for t in (at_limit, over)] == [limit, limit + 1]  # [CLS] ... [SEP]
    long_reply = "Well, " + " ".join(["really"] * 3 * limit) + " yes."
    long_reference = "No, " + " ".join(["never"] * 2 * limit) + "."
    half = " ".join(["tea"] * (limit // 2 + 10))
    contexts = [["Do you like tea?"], ["Do you like tea?"], [half, half], ["Hi."], ["Hi."]]
    responses = [long_reply, long_reply, "Sure.", "Fine.", over]
    references = [long_reference, at_limit, "Yes.", over, "Good."]
    # contexts: the two turns of item 2 joined (1); responses: long_reply twice, over (2); references add
    # long_reference (over is already counted, at_limit is not cut)
    expected = {"hybrid": 1 + 3, "unreferenced": 1 + 2, "referenced": 3}
    for mode, count in expected.items():
        scorer = dialeval.load_scorer("bert_ruber", checkpoint=heads / "calibrated", mode=mode, device="cpu")
        out = scorer.score(contexts=contexts, responses=responses, references=references, progress_bar=False)
        assert out.metadata["truncated_texts"] == count, mode
        assert all(np.isfinite(out.scores))
    short = hybrid.score(contexts=contexts[3:4], responses=["Fine."], references=["Good."], progress_bar=False)
    assert short.metadata["truncated_texts"] == 0
    pone = dialeval.load_scorer("pone", checkpoint=heads / "pone", device="cpu")
    one = pone.score(contexts=[["Do you like tea?"]], responses=[long_reply], progress_bar=False)
    assert one.metadata["truncated_texts"] == 1 and one.metadata["mode"] == "unreferenced"


# -- import order ----------------------------------------------------------------------------------------------


def test_the_package_modules_import_each_other_at_the_top_and_without_a_cycle():
    """Issue 36: normalization, scorer and train imported each other, the circle closed by imports inside
    functions. Every import of a sibling module is now at module level and the import graph has no cycle."""
    import dialeval.metrics.bert_ruber as package

    folder = Path(package.__file__).parent
    names = {p.stem for p in folder.glob("*.py")}
    graph, nested = {}, []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text())
        top = set(tree.body)
        graph[path.stem] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 1:
                targets = {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
            elif node.level == 0 and (node.module or "").startswith("dialeval.metrics.bert_ruber."):
                targets = {node.module.split(".")[3]}
            else:
                continue
            targets &= names
            if node not in top:
                nested.append(f"{path.name}:{node.lineno}")
            graph[path.stem] |= targets
    assert not nested, f"imports of sibling modules inside functions: {nested}"
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as err:
        pytest.fail(f"import cycle: {err.args[1]}")
    assert order.index("ranges") < order.index("scorer") < order.index("normalization")
    assert order.index("calibration") < order.index("train") < order.index("normalization")

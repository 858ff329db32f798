"""The AMR evaluator's recipe and scorer on a tiny DailyDialog++ fixture: preparation writes graphs and relations,
a few steps train and keep a small float16 checkpoint, the contrastive loss reaches the graph branch (the original's
never did), and the scorer gives probabilities in order, independent of the batch, with its graph source in the
signature."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.metrics.amr_eval.inputs import join_context, turn_relation
from dialeval.metrics.amr_eval.graphs import SimpleGraph
from dialeval.metrics.amr_eval.data import Example, length_balance_weights, length_cue
from dialeval.metrics.amr_eval.train import contrastive_loss, slm_loss

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOPICS = ["the beach", "dinner", "a movie", "the weather", "work", "music", "football", "a trip", "books", "coffee",
          "the garden", "a concert", "the exam", "a new phone", "the bus", "my sister", "the museum", "a party",
          "the rain", "lunch"]
TINY = ["--batch-size", "4", "--hidden-size", "16", "--max-relations", "8", "--trainable-encoder-layers", "1",
        "--lora-rank", "2", "--device", "cpu", "--threads", "1"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    folder = root / "dailydialog_plusplus"
    folder.mkdir()

    def row(i: int, topic: str) -> dict:
        return {"id": i, "context": [f"Did you enjoy {topic} yesterday?", f"Yes, {topic} was lovely."],
                "positive_responses": [f"I am glad you liked {topic}.", f"Let us go to {topic} again soon.",
                                       f"What did you like most about {topic}?", "That sounds wonderful.",
                                       f"I missed {topic}, sadly."],
                "adversarial_negative_responses": [f"{topic.capitalize()} is a word with letters.",
                                                   f"My cat ate {topic} on Mars.", f"Yesterday {topic} sold shoes.",
                                                   "Lovely enjoy yesterday did you.", f"Please reboot {topic}."],
                "random_negative_responses": ["The printer is out of paper.", "Turn left at the station.",
                                              "My password expired.", "Two kilos of flour, please.",
                                              "The train is late again."]}

    (folder / "dev.json").write_text("".join(json.dumps(row(i, t)) + "\n" for i, t in enumerate(TOPICS)))
    (folder / "test.json").write_text("".join(json.dumps(row(100 + i, t)) + "\n" for i, t in enumerate(TOPICS[:4])))
    return root


@pytest.fixture(autouse=True)
def own_graph_cache(tmp_path, monkeypatch):
    """Graphs are cached under the test's folder, not the user's cache."""
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))


def invoke(out: Path, data: Path, *extra: str):
    return CliRunner().invoke(app, ["train", "amr-eval", "--output-dir", str(out), "--data-dir", str(data), *TINY,
                                    *extra])


def test_context_graphs_join_the_last_turns_under_one_node():
    a = SimpleGraph(concepts=("want", "tea"), edges=((0, 1, "ARG1"),), root=0)
    b = SimpleGraph(concepts=("sure",), root=0)
    joined = join_context([b, SimpleGraph(concepts=()), a])
    assert joined.concepts == ("dialogue", "sure", "want", "tea") and joined.root == 0
    assert set(joined.edges) == {(0, 1, turn_relation(3)), (2, 3, "ARG1"), (0, 2, turn_relation(1))}
    assert join_context([SimpleGraph(concepts=())]).n_nodes == 0
    assert join_context([b, a], max_turns=1).concepts == ("dialogue", "want", "tea")


def test_the_contrastive_loss_trains_text_and_graph_vectors():
    text = torch.randn(6, 8, requires_grad=True)
    graph = torch.randn(6, 8, requires_grad=True)
    labels = torch.tensor([1, 1, 0, 1, 0, 1])
    loss = contrastive_loss(text, graph, labels, scale=20.0)
    loss.backward()
    assert loss > 0 and graph.grad.abs().sum() > 0 and text.grad.abs().sum() > 0
    assert graph.grad[labels == 0].abs().sum() == 0  # negatives take no part
    aligned = contrastive_loss(graph.detach().clone(), graph.detach(), labels, scale=20.0)
    assert aligned < loss  # matched vectors cost less
    assert contrastive_loss(text, graph, torch.tensor([1, 0, 0, 0, 0, 0]), scale=20.0) == 0


def test_length_balancing_takes_reply_length_away_as_a_cue():
    def example(words: int, label: int, kind: str) -> Example:
        return Example(context=("hi",), response=" ".join(["word"] * words), label=label, kind=kind, context_id=0)

    # positives mostly short, negatives mostly long, overlapping in the middle
    examples = ([example(n, 1, "positive") for n in [2] * 30 + [6] * 20 + [10] * 10] +
                [example(n, 0, "adversarial") for n in [6] * 10 + [10] * 20 + [20] * 30] +
                [example(n, 0, "random") for n in [10] * 20 + [20] * 10])
    weights = length_balance_weights(examples)
    labels = torch.tensor([e.label for e in examples])
    lengths = torch.tensor([len(e.response.split()) for e in examples], dtype=torch.float64)
    w = torch.from_numpy(weights)
    assert torch.isclose(w[labels == 1].sum(), torch.tensor(60.0, dtype=torch.float64))
    assert torch.isclose(w[labels == 0].sum(), torch.tensor(90.0, dtype=torch.float64))
    assert (w > 0).all()

    def positive_longer(weighted: torch.Tensor) -> float:
        pos, neg = lengths[labels == 1], lengths[labels == 0]
        pair = weighted[labels == 1][:, None] * weighted[labels == 0][None, :]
        wins = (pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double()
        return float((wins * pair).sum() / pair.sum())

    assert positive_longer(torch.ones_like(w)) < 0.1
    assert length_cue(examples) == pytest.approx(positive_longer(torch.ones_like(w)))
    assert length_cue(examples, weights) == pytest.approx(positive_longer(w))
    assert abs(positive_longer(w) - 0.5) < abs(positive_longer(torch.ones_like(w)) - 0.5) / 2
    # within one length, every example of a class weighs the same
    assert len(set(weights[[i for i, e in enumerate(examples) if e.label == 0 and e.response.count(" ") == 9]])) == 1
    with pytest.raises(ValueError, match="positive and negative"):
        length_balance_weights(examples[:60])


def test_the_weighted_loss_counts_each_item_by_its_weight():
    from dialeval.modeling.amr_eval import AmrEvalOutput

    logits = torch.tensor([[0.2, 1.0], [1.5, -0.3], [0.0, 0.4]])
    labels = torch.tensor([1, 1, 0])
    out = AmrEvalOutput(logits=logits)
    plain = slm_loss(out, labels, contrastive_weight=0.0, scale=20.0)
    torch.testing.assert_close(slm_loss(out, labels, contrastive_weight=0.0, scale=20.0,
                                        weights=torch.full((3,), 2.5)), plain)
    dropped = slm_loss(out, labels, contrastive_weight=0.0, scale=20.0, weights=torch.tensor([1.0, 0.0, 1.0]))
    torch.testing.assert_close(dropped, slm_loss(AmrEvalOutput(logits=logits[[0, 2]]), labels[[0, 2]],
                                                 contrastive_weight=0.0, scale=20.0))


def test_prepare_train_and_score(data, tmp_path):
    run = tmp_path / "slm"
    res = invoke(run, data, "--prepare-only", "--negatives", "adversarial,random")
    assert res.exit_code == 0, res.output
    prepared = json.loads((run / "relations.json").read_text())
    assert prepared["graph_source"].startswith("dependency(") and 0 < len(prepared["relations"]) <= 8
    assert prepared["utterances"] > 0
    cue = prepared["train_length_cue"]
    assert set(cue) == {"plain", "length_balanced"} and all(0 <= v <= 1 for v in cue.values())
    res = invoke(run, data, "--negatives", "adversarial,random", "--epochs", "1", "--max-steps", "3",
                 "--eval-every", "3")
    assert res.exit_code == 0, res.output
    assert "test positive vs adversarial: accuracy" in res.output and "test positive vs random" in res.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["finished"] and summary["steps"] == 3 and summary["examples"]["test"] == 4 * 15
    assert json.loads((run / "best" / "config.json").read_text())["pooling"] == "pair"  # the recipe's default
    validation = summary["history"][-1]
    assert validation["val_accuracy"] == pytest.approx(
        (validation["val_adversarial_accuracy"] + validation["val_random_accuracy"]) / 2)

    from safetensors import safe_open

    with safe_open(str(run / "best" / "model.safetensors"), "pt") as fh:
        stored = {k: fh.get_tensor(k) for k in fh.keys()}
    assert {t.dtype for t in stored.values()} == {torch.float16}
    assert {k.rpartition(".")[2] for k in stored if k.startswith("encoder.")} == {"lora_A", "lora_B"}
    assert any(k.startswith("graph_layers.") for k in stored)

    import dialeval

    scorer = dialeval.load_scorer("amr_eval", checkpoint=run, device="cpu")
    contexts = [["Did you enjoy the beach yesterday?", "Yes, it was lovely."]] * 3 + [["Hello there."]]
    responses = ["I am glad you liked it.", "My cat ate the beach on Mars.", "Yes, it was lovely.", "Hi!"]
    out = scorer.score(contexts=contexts, responses=responses)
    assert len(out.scores) == 4 and all(0 < s < 1 for s in out.scores)
    assert "graph_source:dependency(" in out.signature
    one_by_one = [scorer.score(contexts=[c], responses=[r], batch_size=1).scores[0] for c, r in zip(contexts,
                                                                                                   responses)]
    assert one_by_one == out.scores
    again = scorer.score(contexts=contexts, responses=responses)
    assert again.metadata["graph_cache_hit_rate"] == 1.0 and again.scores == out.scores
    assert out.metadata["graph_utterances"] == again.metadata["graph_utterances"] == 6  # distinct turns and replies
    assert 0 <= out.metadata["graphs_parsed"] <= 6 and again.metadata["graphs_parsed"] == 0
    from dialeval.cli.app import summary_line

    line = summary_line([again.metadata])
    assert line.startswith("summary: 4 items, 0 truncated items, graphs of 6 utterances in ") and "(0 parsed)" in line
    meta = {**again.metadata, "graphs_parsed": 5, "graph_seconds": 0.5}
    assert "graphs of 6 utterances in 0.5 s (5 parsed, 10/s)" in summary_line([meta])
    from dialeval.errors import InputError
    from dialeval.metrics.amr_eval import load_graph_source
    from dialeval.metrics.amr_eval.graph_sources import ParserGraphs

    # trained on a parser's graphs: the shipped parser is the default only when it is the parser the checkpoint names
    config_file = run / "best" / "config.json"
    config = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**config, "graph_source": "parser(model=0123456789abcdef,v=1)"}))
    with pytest.raises(InputError, match=r"trained on graphs from 'parser\(model=0123456789abcdef"):
        dialeval.load_scorer("amr_eval", checkpoint=run, device="cpu")
    config_file.write_text(json.dumps({**config, "graph_source": load_graph_source("parser").signature()}))
    assert isinstance(dialeval.load_scorer("amr_eval", checkpoint=run, device="cpu").graphs.source, ParserGraphs)

    with pytest.raises(InputError, match="has no graph branch"):
        text_only = tmp_path / "text_only"
        res = invoke(text_only, data, "--no-graph", "--no-gate", "--epochs", "1", "--max-steps", "1")
        assert res.exit_code == 0, res.output
        dialeval.load_scorer("amr_eval", checkpoint=text_only, device="cpu", graph_source="dependency")


def test_bad_options_are_refused(data, tmp_path):
    res = invoke(tmp_path / "x", data, "--no-graph")
    assert res.exit_code == 2 and "add --no-gate" in res.output
    res = invoke(tmp_path / "x", data, "--graph-source", "amrlib")
    assert res.exit_code == 2 and "--amrlib-model-dir" in res.output
    res = invoke(tmp_path / "x", data, "--negatives", "parroted")
    assert res.exit_code == 2 and "negatives must name" in res.output


class RecordingBackend:
    """Answers every request with log-probabilities that put 0.75 on "4" and 0.25 on "2" (rating 3.5); fails the
    requests whose prompt holds ``fail_on``."""

    max_retries = 0

    def __init__(self, fail_on: str | None = None):
        self.prompts: list[str] = []
        self.fail_on = fail_on

    def signature(self):
        return "recording"

    def complete(self, messages):
        from dialeval.metrics.amr_eval.judge_backends import Completion, JudgeBackendError

        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if self.fail_on and self.fail_on in prompt:
            raise JudgeBackendError("refused")
        return Completion("4", {"4": -0.2876821, "2": -1.3862944})


def test_the_judge_reads_the_slm_probability_and_graphs_and_its_rating_is_the_score(data, tmp_path):
    import math

    import dialeval
    from dialeval.errors import InputError
    from dialeval.metrics.amr_eval.judge import LlmJudge
    from dialeval.metrics.amr_eval.scorer import JudgeFailed

    run = tmp_path / "slm"
    res = invoke(run, data, "--epochs", "1", "--max-steps", "1")
    assert res.exit_code == 0, res.output
    contexts = [["Did you enjoy the beach yesterday?", "Yes, it was lovely."], ["Hello there."], ["Hi!"]]
    responses = ["I am glad you liked it.", "My cat ate the beach on Mars.", ""]
    slm = dialeval.load_scorer("amr_eval", checkpoint=run, device="cpu")
    alone = slm.score(contexts=contexts[:2], responses=responses[:2])

    backend = RecordingBackend()
    judged = dialeval.load_scorer("amr_eval", checkpoint=run, device="cpu",
                                  judge=LlmJudge(backend, with_structure=True, cache_dir=tmp_path / "judge"))
    out = judged.score(contexts=contexts, responses=responses, empty_turns="skip")
    assert out.scores[:2] == [pytest.approx(3.5)] * 2 and out.scores[2] is None
    assert out.metadata["slm_scores"][:2] == alone.scores and out.metadata["slm_scores"][2] is None
    assert "|judge:llm-judge(prompt=amr-judge-v1, with_structure=True, backend=recording)" in out.signature
    assert len(backend.prompts) == 2
    for prompt, p in zip(backend.prompts, alone.scores):
        assert f"gives the probability that the response is appropriate: {p:.3f}" in prompt
        assert "AMR graph of the dialogue: (dialogue" in prompt and "AMR graph of the response: (" in prompt
    again = judged.score(contexts=contexts[:2], responses=responses[:2])  # from the judge's cache
    assert again.scores == out.scores[:2] and again.metadata["judge_from_cache"] == 2 and len(backend.prompts) == 2

    g_eval = RecordingBackend()
    judged.use_judge(LlmJudge(g_eval, with_structure=False, cache=False))
    out = judged.score(contexts=contexts[:2], responses=responses[:2])
    assert "with_structure=False" in out.signature and not any("probability" in p for p in g_eval.prompts)
    with pytest.raises(InputError, match="judge_structure=True but the judge was made with with_structure=False"):
        judged.use_judge(LlmJudge(g_eval, with_structure=False, cache=False), structure=True)

    failing = RecordingBackend(fail_on="Mars")
    judged.use_judge(LlmJudge(failing, with_structure=True, cache_dir=tmp_path / "judge2"))
    with pytest.raises(JudgeFailed, match=r"no rating for 1 of 2 items \(first: item 1: request failed"):
        judged.score(contexts=contexts[:2], responses=responses[:2])
    judged.use_judge(None)
    assert judged.score(contexts=contexts[:2], responses=responses[:2]).scores == alone.scores
    assert "|judge:" not in judged.signature and not math.isnan(alone.system_score)


def test_the_evaluate_module_scores_with_the_slm_or_a_judge(tmp_path):
    """`evaluate.load("metrics/amr_eval")` on the shipped default: SLM probabilities by default, a judge's ratings
    with `judge=`, and back to the SLM on the next call without it."""
    import evaluate

    import dialeval
    from dialeval.metrics.amr_eval.judge import LlmJudge

    root = Path(__file__).resolve().parents[2]
    module = evaluate.load(str(root / "metrics" / "amr_eval"))
    inputs = {"predictions": ["Sure, what time works for you?", "The printer is out of paper."],
              "contexts": [["Want to get lunch?"], ["Want to get lunch?"]]}
    slm = module.compute(**inputs)
    direct = dialeval.load_scorer("amr_eval", device="cpu").score(contexts=inputs["contexts"],
                                                                   responses=inputs["predictions"])
    assert slm["scores"] == pytest.approx(direct.scores) and slm["signature"] == direct.signature
    judge = LlmJudge(RecordingBackend(), with_structure=True, cache=False)
    judged = module.compute(**inputs, judge=judge)
    assert judged["scores"] == [pytest.approx(3.5)] * 2 and "|judge:llm-judge(" in judged["signature"]
    assert module.compute(**inputs)["scores"] == slm["scores"]

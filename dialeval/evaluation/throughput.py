"""Throughput benchmark: BERTScore through the scoring API vs the raw encoder forward pass.

Run ``dialeval bench bertscore [--n 2000] [--batch-size 32] [--device cpu] [--threads N] [--data-dir DIR]
[--repeats 1] [--json PATH]`` (:func:`run` measures, :func:`format_table` prints the table).

Pairs: ``--n`` context/response/reference triples from the GRADE human-evaluation data (1200 pairs, repeated in
order up to ``--n``) when the data directory resolves (:func:`dialeval.paths.resolve_data_dir`), otherwise a
deterministic synthetic set; the output says which.

Measures (model loading and a short warm-up excluded from every timing):

(a) ``BertScoreScorer.score`` on all pairs with a fresh scorer (cold embedding cache): tokenisation, padding-free
    length-sorted batches of the distinct response/reference texts, greedy matching, everything the API does;
(b) the raw encoder forward on the same pairs: all response and reference texts tokenised up front (not timed,
    reported apart), padded batches of ``--batch-size`` in input order, ``model(**batch)`` under
    ``torch.inference_mode()``, no pooling;
(c) as (b) but over the distinct texts only, i.e. the same work (b) does minus what (a) saves by deduplication.

Throughput is pairs per second (``--n`` / seconds) for all three; the table also gives the (a)/(b) and (a)/(c)
ratios, the torch thread count and the batch size. This is a benchmark, not a test.
"""

from __future__ import annotations

import random
import time

import torch

from ..backbone.device import set_torch_threads

SYSTEMS = [
    ("dailydialog", "transformer_generator"),
    ("dailydialog", "transformer_ranker"),
    ("convai2", "bert_ranker"),
    ("convai2", "dialogGPT"),
    ("convai2", "transformer_generator"),
    ("convai2", "transformer_ranker"),
    ("empatheticdialogues", "transformer_generator"),
    ("empatheticdialogues", "transformer_ranker"),
]


def _grade_triples(data_dir: str | None) -> tuple[list, list, list, str] | None:
    from ..paths import DataDirNotFound, resolve_data_dir

    try:
        root = resolve_data_dir(data_dir) / "grade_eval" / "eval_data"
    except DataDirNotFound:
        return None
    contexts, responses, references = [], [], []
    for corpus, system in SYSTEMS:
        folder = root / corpus / system
        try:
            ctx = (folder / "human_ctx.txt").read_text(encoding="utf-8").splitlines()
            hyp = (folder / "human_hyp.txt").read_text(encoding="utf-8").splitlines()
            ref = (folder / "human_ref.txt").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return None
        if not (len(ctx) == len(hyp) == len(ref)):
            raise RuntimeError(f"{folder}: ctx/hyp/ref line counts differ ({len(ctx)}, {len(hyp)}, {len(ref)})")
        contexts += [[t.strip() for t in c.split("|||") if t.strip()] for c in ctx]
        responses += hyp
        references += ref
    return contexts, responses, references, f"GRADE eval data ({len(responses)} pairs from {root})"


_WORDS = (
    "i you we they it the a an and but so because is are was were do did have had will would can could not "
    "like love hate want need go went come see saw know think feel good great bad fine okay really very "
    "today tomorrow yesterday weekend work school home friend family dog cat movie music book food pizza "
    "coffee beach trip city game team weather rain sun morning night dinner lunch what where when why how"
).split()


def _synthetic_triples(n: int) -> tuple[list, list, list, str]:
    rng = random.Random(0)

    def sentence() -> str:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 24))]
        return " ".join(words) + rng.choice([" .", " ?", " !"])

    contexts = [[sentence(), sentence()] for _ in range(n)]
    return contexts, [sentence() for _ in range(n)], [sentence() for _ in range(n)], "synthetic (deterministic, seed 0)"


def build_triples(n: int, data_dir: str | None = None) -> tuple[list, list, list, str]:
    """``n`` triples: the GRADE pairs repeated in order, or a synthetic set if the data is not available."""
    grade = _grade_triples(data_dir)
    if grade is None:
        return _synthetic_triples(n)
    contexts, responses, references, source = grade
    k = len(responses)
    pick = [i % k for i in range(n)]
    source += f", repeated in order to {n}" if n > k else f", first {n}"
    return [contexts[i] for i in pick], [responses[i] for i in pick], [references[i] for i in pick], source


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def raw_encoder_forward(encoder, texts: list[str], batch_size: int) -> tuple[float, float]:
    """(tokenisation seconds, forward seconds) for padded input-order batches of ``texts``."""
    tok = encoder.tokenizer
    tok.truncation_side = "right"
    start = time.perf_counter()
    batches = [
        tok(texts[i : i + batch_size], padding=True, truncation=True, max_length=encoder.max_length,
            return_tensors="pt")
        for i in range(0, len(texts), batch_size)
    ]
    tokenize_s = time.perf_counter() - start
    model, device = encoder.model, encoder.device
    _sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            model(**{k: v.to(device) for k, v in batch.items()})
    _sync(device)
    return tokenize_s, time.perf_counter() - start


def run(n: int = 2000, batch_size: int = 32, device: str | None = None, data_dir: str | None = None,
        threads: int | None = None, repeats: int = 1) -> dict:
    """Measure (a), (b) and (c) of the module docstring on ``n`` triples, each ``repeats`` times keeping the fastest;
    ``threads`` sets torch's CPU threads first. Returns the measurements as a JSON-ready dict."""
    from ..baselines.bertscore import BertScoreScorer
    from ..baselines.common import encoder_label

    set_torch_threads(threads or None)
    contexts, responses, references, source = build_triples(n, data_dir)
    scorer = BertScoreScorer(device=device)
    encoder = scorer.encoder  # load outside the timings
    # warm-up (one-time allocations, kernel selection): unrelated texts, not in the benchmark set
    encoder.token_embeddings(["warm up the encoder", "a second warm-up text"], batch_size=batch_size)
    raw_encoder_forward(encoder, ["warm up the encoder", "a second warm-up text"], batch_size)

    best_a = float("inf")
    for _ in range(repeats):
        encoder._cache.clear()  # cold cache
        _sync(encoder.device)
        start = time.perf_counter()
        out = scorer.score(contexts=contexts, responses=responses, references=references, batch_size=batch_size,
                           progress_bar=False)
        _sync(encoder.device)
        best_a = min(best_a, time.perf_counter() - start)
    texts = responses + references
    distinct = list(dict.fromkeys(texts))
    tok_b, best_b = 0.0, float("inf")
    tok_c, best_c = 0.0, float("inf")
    for _ in range(repeats):
        tok_b, t_b = raw_encoder_forward(encoder, texts, batch_size)
        tok_c, t_c = raw_encoder_forward(encoder, distinct, batch_size)
        best_b, best_c = min(best_b, t_b), min(best_c, t_c)

    return {
        "data": source,
        "n_pairs": n,
        "encoder": encoder_label(encoder),
        "device": str(encoder.device),
        "torch_threads": torch.get_num_threads(),
        "batch_size": batch_size,
        "repeats": repeats,
        "bertscore": {"texts_encoded": out.metadata["n_texts_encoded"], "seconds": round(best_a, 4),
                      "pairs_per_s": round(n / best_a, 2), "system_score": round(out.system_score, 6)},
        "raw_forward_all": {"texts_encoded": len(texts), "seconds": round(best_b, 4),
                            "pairs_per_s": round(n / best_b, 2), "tokenize_seconds": round(tok_b, 4)},
        "raw_forward_distinct": {"texts_encoded": len(distinct), "seconds": round(best_c, 4),
                                 "pairs_per_s": round(n / best_c, 2), "tokenize_seconds": round(tok_c, 4)},
        "ratio_bertscore_over_raw_all": round(best_b / best_a, 4),
        "ratio_bertscore_over_raw_distinct": round(best_c / best_a, 4),
        "versions": {"torch": torch.__version__},
    }


def format_table(r: dict) -> str:
    """The human-readable table of a :func:`run` result."""
    rows = [
        ("(a) BertScoreScorer.score, cold cache", r["bertscore"]),
        ("(b) raw model(**batch), padded, all texts", r["raw_forward_all"]),
        ("(c) raw model(**batch), padded, distinct texts", r["raw_forward_distinct"]),
    ]
    lines = [
        f"data:    {r['data']}",
        f"encoder: {r['encoder']} | device: {r['device']} | torch threads: {r['torch_threads']} | "
        f"batch size: {r['batch_size']} | pairs: {r['n_pairs']} | repeats: {r['repeats']} (best kept)",
        "",
        f"{'measure':<50} {'texts':>7} {'seconds':>9} {'pairs/s':>9}",
        "-" * 78,
    ]
    for label, m in rows:
        lines.append(f"{label:<50} {m['texts_encoded']:>7} {m['seconds']:>9.3f} {m['pairs_per_s']:>9.1f}")
    lines += [
        "-" * 78,
        f"ratio (a)/(b) throughput: {r['ratio_bertscore_over_raw_all']:.3f}   "
        f"(a)/(c): {r['ratio_bertscore_over_raw_distinct']:.3f}",
        f"(tokenisation, not in (b)/(c): {r['raw_forward_all']['tokenize_seconds']:.3f} s / "
        f"{r['raw_forward_distinct']['tokenize_seconds']:.3f} s)",
    ]
    return "\n".join(lines)

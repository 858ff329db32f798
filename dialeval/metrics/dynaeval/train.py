"""DynaEval's training recipe: ``dialeval train dynaeval``.

Steps (each cached in the output directory, so a re-run or a resumed run skips what is done):
1. DailyDialog train / validation / test dialogues with 4-30 utterances, subsampled to ``max_dialogues`` /
   ``max_val_dialogues`` / ``max_test_dialogues`` (seeded), and up to ``perturbations`` UR / SS perturbations each
   (:mod:`~dialeval.metrics.dynaeval.data`), saved as ``pairs_<split>.jsonl``;
2. one embedding per unique utterance text with the frozen encoder (masked mean pooling), cached in
   ``embeddings/`` (:class:`~dialeval.backbone.store.EmbeddingStore`): training runs only the small graph model;
3. margin ranking loss (margin 0.1) between the original's and the perturbation's scores, Adam (lr 0.002, L2 weight
   decay 1e-8), no gradient clipping, learning rate halved every epoch (``decay_every`` steps), seed 345678, as
   the original, but batches of 128 pairs for 2 epochs (the original: 512 pairs, 20 epochs) to fit a CPU budget;
   validation pairwise accuracy (original scored strictly above its perturbation) every ``eval_every`` steps and at
   the end; the checkpoint with the best validation accuracy is kept in ``best/``
   (``save_pretrained``: config + safetensors + the custom-code files; the encoder is not part of the model);
4. the best checkpoint's pairwise accuracy on the test pairs, in ``summary.json``.

Defaults (every train dialogue, 20 perturbations: ~185k training pairs, ~78k unique utterances to encode) fit about
25 minutes on a 2-core CPU with one torch thread: ~5 min of encoding, ~9 min per epoch.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ...backbone import Encoder, encoder_name
from ...backbone.store import EmbeddingStore
from ...benchmarks import load_benchmark
from ...training import (
    TrainingArguments,
    replace_checkpoint,
    train,
    training_device,
    with_torch_threads,
)
from .data import (
    STRATEGIES,
    DialoguePair,
    PairSet,
    build_pairs,
    filter_dialogues,
    subsample,
)
from .options import DynaEvalTrainingOptions, dialogue_limit

MARGIN = 0.1
SPLITS = ("train", "validation", "test")
EMBEDDINGS_DIR = "embeddings"
DATA_OPTIONS_FILE = "data_options.json"
CORPUS_STATS_FILE = "corpus_stats.json"


def _limits(opts: DynaEvalTrainingOptions) -> dict[str, int | None]:
    return {split: dialogue_limit(n) for split, n in
            (("train", opts.max_dialogues), ("validation", opts.max_val_dialogues), ("test", opts.max_test_dialogues))}


def prepare_pairs(opts: DynaEvalTrainingOptions) -> tuple[dict[str, PairSet], dict]:
    """Pairs of every split (built once, then read from the run folder) and corpus statistics."""
    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    options_file = out / DATA_OPTIONS_FILE
    if options_file.exists():
        saved = json.loads(options_file.read_text())
        if saved != opts.data_options():
            raise ValueError(f"{out} holds pairs made with {saved}, not {opts.data_options()}; "
                             "use a new --output-dir (or the same data options) to resume")
    options_file.write_text(json.dumps(opts.data_options(), indent=1))
    stats_file = out / CORPUS_STATS_FILE
    sets, stats = {}, (json.loads(stats_file.read_text()) if stats_file.exists() else {})
    for split in SPLITS:
        path = out / f"pairs_{split}.jsonl"
        limit = _limits(opts)[split]
        if limit == 0:
            sets[split] = PairSet([], [])
            continue
        if not path.exists():
            ds = load_benchmark("dailydialog", split=split, data_dir=opts.data_dir)
            dialogues, ids = list(ds["utterances"]), list(ds["dialogue_id"])
            kept = filter_dialogues(dialogues)
            chosen = subsample(kept, limit, seed=opts.seed, split=split)
            pairs = build_pairs([dialogues[i] for i in chosen], [ids[i] for i in chosen], split=split,
                                seed=opts.seed, perturbations=opts.perturbations)
            pairs.save(path)
            stats[split] = {"dialogues": len(dialogues), "kept_4_to_30": len(kept), "used": len(chosen),
                            "utterances": sum(len(dialogues[i]) for i in chosen), "unique_texts": len(pairs.texts)}
            stats_file.write_text(json.dumps(stats, indent=1))
        sets[split] = PairSet.load(path)
    return sets, stats


class PairBatcher:
    """Turns pairs into model inputs: the originals then the perturbations, flattened utterance rows."""

    def __init__(self, pairs: PairSet, store: EmbeddingStore, vectors: torch.Tensor) -> None:
        self.rows = store.rows(pairs.texts)  # text id of this split -> row of the store
        self.vectors = vectors

    def inputs(self, pairs: list[DialoguePair], device: torch.device) -> dict[str, torch.Tensor]:
        dialogues = [p.original for p in pairs] + [p.perturbed for p in pairs]
        rows = torch.from_numpy(self.rows[np.fromiter((t for d in dialogues for t in d), dtype=np.int64)])
        return {"utterance_embeddings": self.vectors[rows].to(device),
                "dialogue_lengths": torch.tensor([len(d) for d in dialogues], dtype=torch.long)}


def pair_scores(model, batcher: PairBatcher, pairs: list[DialoguePair], device) -> tuple[torch.Tensor, torch.Tensor]:
    score = model(**batcher.inputs(pairs, device)).score
    return score[: len(pairs)], score[len(pairs):]


@torch.inference_mode()
def evaluate_pairs(model, batcher: PairBatcher, pairs: list[DialoguePair], chunk: int = 256) -> dict[str, float]:
    """Pairwise accuracy (original strictly above perturbation), overall and per perturbation kind, and the mean
    margin ranking loss."""
    if not pairs:
        return {}
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    wins, losses = [], []
    for start in range(0, len(pairs), chunk):
        s_orig, s_pert = pair_scores(model, batcher, pairs[start:start + chunk], device)
        wins.append((s_orig > s_pert).cpu().double())  # float64 on the CPU: MPS has none
        losses.append(torch.clamp(MARGIN - (s_orig - s_pert), min=0).cpu().double())
    model.train(was_training)
    win, loss = torch.cat(wins), torch.cat(losses)
    kinds = np.array([p.kind for p in pairs])
    out = {"pair_accuracy": float(win.mean()), "ranking_loss": float(loss.mean())}
    for kind in STRATEGIES:
        sel = torch.from_numpy(kinds == kind)
        if sel.any():
            out[f"pair_accuracy_{kind}"] = float(win[sel].mean())
    return out


def build_model(opts: DynaEvalTrainingOptions, encoder: Encoder):
    from dialeval.modeling.dynaeval import DynaEvalConfig, DynaEvalModel

    config = DynaEvalConfig(
        utterance_dim=encoder.hidden_size, utterance_encoder=encoder_name(encoder.name_or_path),
        utterance_encoder_sha256=encoder.fingerprint, max_utterance_tokens=encoder.max_length,
        window_past=opts.window_past, window_future=opts.window_future, dropout=opts.dropout,
    )
    torch.manual_seed(opts.seed)
    return DynaEvalModel(config)


@with_torch_threads
def run(opts: DynaEvalTrainingOptions) -> dict:
    """Train DynaEval and return a summary (also written to ``<output_dir>/summary.json``)."""
    opts.check()
    out = Path(opts.output_dir)
    sets, corpus_stats = prepare_pairs(opts)
    if not sets["train"].pairs or not sets["validation"].pairs:
        raise ValueError("no training or validation pairs: check the data directory and the dialogue limits")
    encoder = Encoder(device=training_device(opts.device), max_length=opts.max_utterance_tokens)
    texts = list(dict.fromkeys(t for s in sets.values() for t in s.texts))
    store = EmbeddingStore(out / EMBEDDINGS_DIR, encoder, batch_size=opts.encode_batch_size)
    embed_stats = store.ensure(texts, desc="utterance")
    vectors = torch.from_numpy(store.matrix)
    batchers = {split: PairBatcher(sets[split], store, vectors) for split in SPLITS}
    train_pairs, val_pairs = sets["train"].pairs, sets["validation"].pairs
    model = build_model(opts, encoder)
    del encoder
    steps_per_epoch = len(train_pairs) // opts.batch_size
    if steps_per_epoch < 1:
        raise ValueError(f"{len(train_pairs)} training pairs is less than one batch of {opts.batch_size}")
    ranking = torch.nn.MarginRankingLoss(margin=MARGIN)

    def epoch_batches(epoch: int):
        order = np.random.default_rng([opts.seed, epoch]).permutation(len(train_pairs))
        for start in range(0, steps_per_epoch * opts.batch_size, opts.batch_size):
            yield [train_pairs[i] for i in order[start:start + opts.batch_size]]

    def loss_fn(model, batch) -> torch.Tensor:
        device = next(model.parameters()).device
        s_orig, s_pert = pair_scores(model, batchers["train"], batch, device)
        return ranking(s_orig, s_pert, torch.ones_like(s_orig))

    def evaluate_fn(model) -> dict[str, float]:
        return {f"val_{k}": v for k, v in evaluate_pairs(model, batchers["validation"], val_pairs).items()}

    args = TrainingArguments(
        output_dir=str(out), seed=opts.seed, epochs=opts.epochs, learning_rate=opts.learning_rate,
        weight_decay=opts.weight_decay, warmup_ratio=0.0, max_grad_norm=None, optimizer="adam",
        lr_schedule="step", step_decay_every=opts.decay_every or steps_per_epoch, step_decay_gamma=opts.decay_gamma,
        eval_every=opts.eval_every or steps_per_epoch, log_every=max(1, min(20, steps_per_epoch)),
        max_steps=opts.max_steps, device=opts.device,
    )
    start = time.perf_counter()
    result = train(
        model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=steps_per_epoch,
        loss_fn=loss_fn, evaluate_fn=evaluate_fn, save_best=replace_checkpoint, selection_key="val_pair_accuracy",
        greater_is_better=True, resume=opts.resume,
    )
    train_seconds = time.perf_counter() - start

    test = {}
    if sets["test"].pairs:
        from ...modeling.dynaeval import DynaEvalModel
        from ...scoring.learned import load_pretrained

        best = load_pretrained(DynaEvalModel, out / "best", dtype=torch.float32).to(next(model.parameters()).device)
        test = {f"test_{k}": v for k, v in evaluate_pairs(best, batchers["test"], sets["test"].pairs).items()}
    summary = {
        "pairs": {split: len(sets[split].pairs) for split in SPLITS},
        "pairs_by_kind": {split: {k: sum(p.kind == k for p in sets[split].pairs) for k in STRATEGIES}
                          for split in SPLITS},
        "corpus": corpus_stats, "unique_texts": len(texts), "embeddings": embed_stats,
        "steps_per_epoch": steps_per_epoch, "steps": result.steps, "best_step": result.best_step,
        "best_val_pair_accuracy": result.best_metric, **test,
        "train_seconds": round(train_seconds, 1), "torch_threads": torch.get_num_threads(),
        "history": result.history, "options": asdict(opts),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary

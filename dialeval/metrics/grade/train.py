"""GRADE's training recipe: ``dialeval train grade``.

Steps (each cached in the output directory, so a re-run or a resumed run skips what is done):
1. keyword IDF fitted on all DailyDialog utterances (train + validation + test, as the original);
2. the ConceptNet graph tables (:class:`~dialeval.metrics.grade.tables.GraphTables`);
3. training and validation pairs with one lexical (BM25) and one embedding negative per positive
   (:mod:`~dialeval.metrics.grade.data`), subsampled to ``max_positives`` / ``max_val_positives``;
4. margin ranking loss (margin 0.1) between the positive and negative scores, AdamW, linear warm-up (10%) and
   decay, gradient clipping 10, batch 16 pairs, seed 71; validation ranking loss every ``eval_every`` steps; the
   checkpoint with the lowest validation ranking loss is kept (as the original).
The best checkpoint is written as a *small* checkpoint: the fine-tuned top encoder layers and every non-encoder
module in float16 (the frozen lower layers come from the encoder's package at load time), beside the keyword IDF
and graph tables the scorer needs.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ...backbone import Encoder
from ...benchmarks import load_benchmark
from ...training import (
    TrainingArguments,
    replace_checkpoint,
    train,
    training_device,
    with_torch_threads,
)
from .data import GradePair, build_pairs, context_windows, load_pairs, save_pairs
from .features import GraphFeaturizer
from .inputs import GRAPH_DIR, KEYWORDS_FILE, GradeInputBuilder
from .keywords import KeywordExtractor
from .options import GradeTrainingOptions
from .tables import GraphTables


def _dialogues(split: str, data_dir: str | None) -> list[list[str]]:
    return list(load_benchmark("dailydialog", split=split, data_dir=data_dir)["utterances"])


def prepare_resources(opts: GradeTrainingOptions, encoder: Encoder) -> tuple[KeywordExtractor, GraphTables]:
    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    kw_path = out / KEYWORDS_FILE
    if kw_path.exists():
        extractor = KeywordExtractor.load(kw_path)
    else:
        utterances = [u for split in ("train", "validation", "test") for d in _dialogues(split, opts.data_dir) for u in d]
        extractor = KeywordExtractor().fit(utterances)
        extractor.save(kw_path)
    tables = GraphTables.build(opts.data_dir, cache_dir=out / "graph_cache")
    return extractor, tables


def prepare_pairs(opts: GradeTrainingOptions, encoder: Encoder) -> tuple[list[GradePair], list[GradePair]]:
    out = Path(opts.output_dir)
    result = []
    for split, limit in (("train", opts.max_positives or None), ("validation", opts.max_val_positives)):
        path = out / f"pairs_{split}.jsonl"
        if not path.exists():
            windows = context_windows(_dialogues(split, opts.data_dir))
            save_pairs(build_pairs(windows, encoder=encoder, max_positives=limit, seed=opts.seed), path)
        result.append(load_pairs(path))
    return result[0], result[1]


def build_model(opts: GradeTrainingOptions, node_feature_dim: int):
    from dialeval.modeling.grade import GradeConfig, GradeModel
    from dialeval.modeling.grade.modeling_grade import load_base_encoder_state_dict

    config = GradeConfig(
        node_feature_dim=node_feature_dim,
        trainable_encoder_layers=opts.trainable_encoder_layers,
        max_seq_length=opts.max_seq_length,
        use_graph=opts.use_graph,
        use_khop=opts.use_khop,
        use_hop_attention=opts.use_hop_attention,
    )
    torch.manual_seed(opts.seed)
    model = GradeModel(config)
    missing, unexpected = model.load_state_dict(load_base_encoder_state_dict(config.base_encoder), strict=False)
    not_encoder = [k for k in missing if k.startswith("encoder.")]
    if not_encoder or unexpected:
        raise RuntimeError(f"base encoder did not fit: missing {not_encoder[:5]}, unexpected {unexpected[:5]}")
    model.freeze_encoder()
    return model


def save_small_checkpoint(model, path: Path, resources_dir: Path) -> None:
    """fp16 trainable weights + config + the keyword IDF and graph tables the scorer needs."""
    state = {k: v.to(torch.float16) for k, v in model.trainable_state_dict().items()}
    replace_checkpoint(model, path, state_dict=state)
    shutil.copy(resources_dir / KEYWORDS_FILE, path / KEYWORDS_FILE)


@with_torch_threads
def run(opts: GradeTrainingOptions) -> dict:
    """Train GRADE and return a summary (also written to ``<output_dir>/summary.json``)."""
    opts.check()
    out = Path(opts.output_dir)
    encoder = Encoder(device=training_device(opts.device))
    extractor, tables = prepare_resources(opts, encoder)
    train_pairs, val_pairs = prepare_pairs(opts, encoder)
    featurizer = GraphFeaturizer(tables, extractor)
    model = build_model(opts, node_feature_dim=tables.dim)
    builder = GradeInputBuilder(encoder.tokenizer, featurizer, max_seq_length=opts.max_seq_length,
                                use_graph=opts.use_graph)
    if opts.use_graph:  # one spaCy pass over every text instead of one per batch
        builder.graphs([(p.context, r) for p in train_pairs + val_pairs for r in (p.positive, p.negative)])
    loss_fn_ = torch.nn.MarginRankingLoss(margin=0.1)
    steps_per_epoch = len(train_pairs) // opts.batch_size

    def to_inputs(pairs: list[GradePair], device) -> tuple[dict, dict]:
        pos = builder.batch([(p.context, p.positive) for p in pairs], device)
        neg = builder.batch([(p.context, p.negative) for p in pairs], device)
        return pos, neg

    def epoch_batches(epoch: int):
        order = np.random.default_rng(opts.seed + epoch).permutation(len(train_pairs))
        for start in range(0, steps_per_epoch * opts.batch_size, opts.batch_size):
            yield [train_pairs[i] for i in order[start:start + opts.batch_size]]

    def loss_fn(model, batch) -> torch.Tensor:
        device = next(model.parameters()).device
        pos, neg = to_inputs(batch, device)
        s_pos, s_neg = model(**pos).score, model(**neg).score
        return loss_fn_(s_pos, s_neg, torch.ones_like(s_pos))

    def evaluate_fn(model) -> dict[str, float]:
        device = next(model.parameters()).device
        losses, wins = [], []
        with torch.inference_mode():
            for start in range(0, len(val_pairs), 64):
                chunk = val_pairs[start:start + 64]
                pos, neg = to_inputs(chunk, device)
                s_pos, s_neg = model(**pos).score, model(**neg).score
                losses.append(torch.clamp(0.1 - (s_pos - s_neg), min=0).sum().item())
                wins.append((s_pos > s_neg).float().sum().item())
        return {"val_ranking_loss": sum(losses) / len(val_pairs), "val_pair_accuracy": sum(wins) / len(val_pairs)}

    def save_best(model, path: Path) -> None:
        save_small_checkpoint(model, path, out)
        tables.save(path / GRAPH_DIR)

    args = TrainingArguments(
        output_dir=str(out), seed=opts.seed, epochs=opts.epochs, learning_rate=opts.learning_rate,
        head_learning_rate=opts.head_learning_rate, eval_every=opts.eval_every or steps_per_epoch,
        max_steps=opts.max_steps, device=opts.device,
    )
    result = train(
        model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=steps_per_epoch, loss_fn=loss_fn,
        evaluate_fn=evaluate_fn, save_best=save_best, selection_key="val_ranking_loss", greater_is_better=False,
        is_head=lambda name: not name.startswith("encoder."), resume=opts.resume,
    )
    summary = {
        "train_pairs": len(train_pairs), "validation_pairs": len(val_pairs), "steps": result.steps,
        "best_step": result.best_step, "best_val_ranking_loss": result.best_metric, "seconds": result.seconds,
        "history": result.history, "options": asdict(opts),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary

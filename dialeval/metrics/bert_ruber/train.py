"""Training the RUBER-style heads on cached embeddings, and BERT-RUBER's recipe: ``dialeval train bert-ruber``.

Shared by BERT-RUBER and PONE (:mod:`dialeval.metrics.pone.train`):

1. **preparation** (needs the data directory and ``datasets``; ``--prepare-only`` stops after it): pairs from
   DailyDialog train / validation (:mod:`.data`), subsampled to ``max_positives`` / ``max_val_positives`` with the
   seed, written as ``pairs.json.gz`` (:func:`~.data.save_pairs`: each text once; 1.5 MB at the defaults), then the
   manifest ``prepared.json`` (:mod:`dialeval.training.prepared`), last. A run folder with a manifest is trained
   from, on any machine: nothing reads the data directory or imports ``datasets`` again, and a folder prepared with
   other values of ``PREPARATION_FIELDS`` (seed, sizes, context turns) is refused with one line naming them;
2. every context and response text is encoded once by the frozen encoder on the training device and stored in the
   run folder (``embeddings/contexts``, ``embeddings/responses``; :class:`~dialeval.backbone.store.EmbeddingStore`),
   so training only runs the head. The embeddings are computed where the model trains, not prepared: 384 floats per
   text would be far too big to carry to another machine (~90 MB at the defaults, against 1.5 MB of pairs), and a
   GPU encodes them ~25 times faster. ``embedding_dir`` points several runs at one store (e.g. PONE after
   BERT-RUBER: the pairs are the same for the same seed and sizes, so only the augmented responses are new);
3. the shared loop (:func:`dialeval.training.train`): Adam (L2 weight decay), constant learning rate, gradient
   clipping, validation once per epoch by default, best checkpoint by validation accuracy (or loss), resumable;
   ``--max-minutes`` stops with the state saved (exit 3; the same command resumes). A batch is a few rows gathered
   from in-memory arrays (cheap: no separate collate);
4. the hybrid score's normalisation ranges are computed on the validation set with the best head and written into
   its ``config.json`` (:mod:`.calibration`); ``summary.json`` records the training device and the positives seen.

Validation: each validation positive with one negative response drawn uniformly from the other validation
responses (fixed by the seed); loss = binary cross-entropy, accuracy = share of the 2n pairs on the right side of 0.5.

BERT-RUBER (Ghazarian et al., 2019, as trained in PONE's code, mode ``origin``): each batch holds ``batch_size``
positives and one uniformly sampled negative response per positive; binary cross-entropy; Adam lr 1e-3, weight decay
1e-4, gradient clipping 10, batch 256 + 256.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...backbone import Encoder
from ...backbone.store import EmbeddingStore
from ...training import TrainingResult, replace_checkpoint, save_half_checkpoint, train, training_device
from ...training.prepared import write_manifest
from ...training.recipe import RecipeRun, run_recipe
from .data import (
    Pair,
    context_text,
    dailydialog_pairs,
    read_pairs,
    response_ids,
    save_pairs,
    uniform_negatives,
)
from .calibration import calibrate_checkpoint
from .options import SELECTION_KEYS, BertRuberTrainingOptions, HeadTrainingOptions  # noqa: F401 (the Python API)


@dataclass
class HeadData:
    """Embedding arrays for head training: train positives, the negative pool, the validation set."""

    train_pairs: list[Pair]
    train_context: np.ndarray  # [N, d]: context embedding of each training pair
    train_gold: np.ndarray  # [N]: id of each pair's response in the pool
    pool: np.ndarray  # [U, d]: embeddings of the distinct training responses
    pool_texts: list[str]
    val_context: np.ndarray  # [2n, d]
    val_response: np.ndarray  # [2n, d]
    val_labels: np.ndarray  # [2n] float32, n ones then n zeros

    @property
    def dim(self) -> int:
        return int(self.pool.shape[1])


class RunEmbeddings:
    """The two embedding stores of a run folder: contexts (cut from the left) and responses (cut from the right)."""

    def __init__(self, folder: Path, encoder: Encoder, *, batch_size: int = 64) -> None:
        self.contexts = EmbeddingStore(folder / "contexts", encoder, side="left", batch_size=batch_size)
        self.responses = EmbeddingStore(folder / "responses", encoder, side="right", batch_size=batch_size)
        self.stats: dict[str, Any] = {}

    def encode(self, contexts: Sequence[str], responses: Sequence[str], *, progress_bar: bool | None = None) -> None:
        self.stats["contexts"] = self.contexts.ensure(contexts, progress_bar=progress_bar, desc="context")
        self.stats["responses"] = self.responses.ensure(responses, progress_bar=progress_bar, desc="response")


def build_head_data(train_pairs: list[Pair], val_pairs: list[Pair], emb: RunEmbeddings, *, context_turns: int,
                    seed: int) -> HeadData:
    """Arrays for training (texts must already be encoded)."""
    gold, pool_texts = response_ids(train_pairs)
    val_gold, val_pool = response_ids(val_pairs)
    val_neg = uniform_negatives(val_gold, len(val_pool), np.random.default_rng([seed, 7919]))
    val_ctx = emb.contexts.vectors([context_text(p.context, context_turns) for p in val_pairs])
    val_pool_vectors = emb.responses.vectors(val_pool)
    return HeadData(
        train_pairs=train_pairs,
        train_context=emb.contexts.vectors([context_text(p.context, context_turns) for p in train_pairs]),
        train_gold=gold,
        pool=emb.responses.vectors(pool_texts),
        pool_texts=pool_texts,
        val_context=np.concatenate([val_ctx, val_ctx]),
        val_response=np.concatenate([val_pool_vectors[val_gold], val_pool_vectors[val_neg]]),
        val_labels=np.concatenate([np.ones(len(val_pairs)), np.zeros(len(val_pairs))]).astype(np.float32),
    )


METRIC = "bert_ruber"
PAIRS_FILE = "pairs.json.gz"
POSITIVES_UNIT = "(context, response) positives, each with one sampled negative"


def prepare_pairs(opts: HeadTrainingOptions, out: Path) -> tuple[list[Pair], Path, list[str]]:
    """Build the DailyDialog train / validation pairs and write them to ``out/pairs.json.gz``; returns the training
    pairs, the data directory and the data files read (relative to it)."""
    from ...benchmarks.dailydialog import DD_SPLITS
    from ...paths import resolve_data_dir

    data_dir = resolve_data_dir(opts.data_dir)
    train_pairs = dailydialog_pairs("train", context_turns=opts.context_turns, limit=opts.max_positives or None,
                                    seed=opts.seed, data_dir=str(data_dir))
    val_pairs = dailydialog_pairs("validation", context_turns=opts.context_turns, limit=opts.max_val_positives,
                                  seed=opts.seed, data_dir=str(data_dir))
    save_pairs(out / PAIRS_FILE, {"train": train_pairs, "validation": val_pairs})
    return train_pairs, data_dir, [DD_SPLITS["train"], DD_SPLITS["validation"]]


def prepare(opts: HeadTrainingOptions) -> dict:
    """BERT-RUBER's preparation: the pairs, then the manifest; returns the manifest."""
    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    _, data_dir, data_files = prepare_pairs(opts, out)
    return write_manifest(out, metric=METRIC, options=opts, files=[PAIRS_FILE], data_dir=data_dir,
                          data_files=data_files)


def prepared_pairs(out: Path) -> tuple[list[Pair], list[Pair]]:
    """The training and validation pairs of a prepared run folder."""
    splits = read_pairs(out / PAIRS_FILE)
    return splits["train"], splits["validation"]


def head_encoder(opts: HeadTrainingOptions) -> Encoder:
    """A head recipe's ``setup``: the frozen encoder (``--encoder``) on the training device, made before preparation
    (:func:`~dialeval.training.recipe.run_recipe`)."""
    return Encoder(opts.encoder, device=training_device(opts.device), cache_size=0)


def run_embeddings(opts: HeadTrainingOptions, out: Path, encoder: Encoder) -> RunEmbeddings:
    folder = Path(opts.embedding_dir) if opts.embedding_dir else out / "embeddings"
    return RunEmbeddings(folder, encoder, batch_size=opts.encode_batch_size)


def seen_fields(run: RecipeRun, result: TrainingResult, model, *, steps: int | None = None,
                unit: str = POSITIVES_UNIT) -> dict[str, Any]:
    """The summary's device and positives seen (optimizer steps, default the result's, x batch size x gradient
    accumulation, in ``unit``)."""
    return run.examples_seen(result, model, key="pairs_seen", unit=unit, steps=steps)


def pair_texts(pairs: Sequence[Pair], context_turns: int) -> tuple[list[str], list[str]]:
    return [context_text(p.context, context_turns) for p in pairs], [p.response for p in pairs]


def batch_dict(context: np.ndarray, response: np.ndarray, labels: np.ndarray) -> dict[str, torch.Tensor]:
    return {"context": torch.from_numpy(np.ascontiguousarray(context, dtype=np.float32)),
            "response": torch.from_numpy(np.ascontiguousarray(response, dtype=np.float32)),
            "labels": torch.from_numpy(np.ascontiguousarray(labels, dtype=np.float32))}


def bce_loss(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    device = next(model.parameters()).device
    return model(context_embeds=batch["context"].to(device), response_embeds=batch["response"].to(device),
                 labels=batch["labels"].to(device)).loss


@torch.inference_mode()
def head_scores(model, context: np.ndarray, response: np.ndarray, *, chunk: int = 4096) -> np.ndarray:
    """Scores of many (context, response) embedding pairs with the model in eval mode (float64 array)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(context), chunk):
        c = torch.from_numpy(np.ascontiguousarray(context[start:start + chunk], dtype=np.float32)).to(device)
        r = torch.from_numpy(np.ascontiguousarray(response[start:start + chunk], dtype=np.float32)).to(device)
        out.append(model(context_embeds=c, response_embeds=r).score.cpu().double().numpy())  # MPS has no float64
    model.train(was_training)
    return np.concatenate(out) if out else np.zeros(0)


def evaluate_head(model, data: HeadData) -> dict[str, float]:
    scores = head_scores(model, data.val_context, data.val_response)
    labels = data.val_labels.astype(np.float64)
    eps = 1e-12
    loss = -np.mean(labels * np.log(np.clip(scores, eps, 1)) + (1 - labels) * np.log(np.clip(1 - scores, eps, 1)))
    accuracy = np.mean((scores >= 0.5) == (labels == 1))
    return {"val_loss": float(loss), "val_accuracy": float(accuracy)}


def build_model(config_cls, model_cls, data_dim: int, opts: HeadTrainingOptions, encoder: Encoder, recipe: str):
    kwargs: dict[str, Any] = {}
    if opts.activation is not None:
        kwargs["activation"] = opts.activation
    if opts.dropout is not None:
        kwargs["dropout"] = opts.dropout
    config = config_cls(embedding_dim=data_dim, context_turns=opts.context_turns,
                        encoder=encoder.name, encoder_sha256=encoder.sha256,
                        encoder_max_length=encoder.max_length, training_recipe=recipe, **kwargs)
    torch.manual_seed(opts.seed)
    return model_cls(config)


def train_head(model, run: RecipeRun, *, out: Path, data: HeadData, epoch_batches: Callable[[int], Iterable[dict]],
               batches_per_epoch: int, epochs: int, learning_rate: float, weight_decay: float,
               dataloader_workers: int | None = None, half: bool = True) -> TrainingResult:
    """The shared loop with the heads' settings: Adam, constant learning rate, BCE, validation per epoch, into
    ``out`` (the run folder, or a stage's); ``dataloader_workers`` overrides the option (None: the option's value);
    ``half``: ``best/`` stores its weights in float16, as a shipped checkpoint does (False for a stage that a later
    stage starts from)."""
    opts = run.opts
    steps_per_epoch = batches_per_epoch // opts.gradient_accumulation
    if steps_per_epoch < 1:
        raise ValueError(f"fewer training positives than one step of {opts.batch_size} x "
                         f"{opts.gradient_accumulation} batches: lower --batch-size or --gradient-accumulation, or "
                         "raise --max-positives")
    workers = {} if dataloader_workers is None else {"dataloader_workers": dataloader_workers}
    args = run.arguments(steps_per_epoch=steps_per_epoch, output_dir=str(out), epochs=epochs,
                         learning_rate=learning_rate, weight_decay=weight_decay, max_grad_norm=opts.max_grad_norm,
                         warmup_ratio=0.0, optimizer="adam", lr_schedule="step", step_decay_gamma=1.0, **workers)
    return train(model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=batches_per_epoch,
                 loss_fn=bce_loss, evaluate_fn=lambda m: evaluate_head(m, data),
                 save_best=save_half_checkpoint if half else replace_checkpoint,
                 selection_key=opts.selection, greater_is_better=SELECTION_KEYS[opts.selection],
                 resume=opts.resume)


def positive_negative_batches(data: HeadData, *, context: np.ndarray, response: np.ndarray, gold: np.ndarray,
                              batch_size: int, seed: int, negatives: Callable[[np.ndarray, np.random.Generator, int],
                                                                               np.ndarray]):
    """``epoch_batches`` for "each positive + one sampled negative": positives are rows of ``context`` /
    ``response`` whose owner gold response id is ``gold``; ``negatives(gold_ids, rng, epoch)`` returns pool ids."""
    n = len(context)
    steps = n // batch_size

    def epoch_batches(epoch: int):
        order = np.random.default_rng([seed, epoch]).permutation(n)
        ones, zeros = np.ones(batch_size, dtype=np.float32), np.zeros(batch_size, dtype=np.float32)
        for b in range(steps):
            idx = order[b * batch_size:(b + 1) * batch_size]
            neg = negatives(gold[idx], np.random.default_rng([seed, epoch, b]), epoch)
            ctx = context[idx]
            yield batch_dict(np.concatenate([ctx, ctx]), np.concatenate([response[idx], data.pool[neg]]),
                             np.concatenate([ones, zeros]))

    return epoch_batches, steps


def run(opts: HeadTrainingOptions) -> dict:
    """Prepare (unless ``output_dir`` holds a prepared run) and train BERT-RUBER's unreferenced head; returns a
    summary (also ``<output_dir>/summary.json``), or ``{"prepared": True, **manifest}`` with ``prepare_only``."""
    return run_recipe(opts, metric=METRIC, prepare=prepare, setup=head_encoder, train=train_prepared)


def train_prepared(run: RecipeRun[HeadTrainingOptions]) -> dict:
    """Encode the prepared pairs, train the head, calibrate its hybrid ranges and report."""
    from dialeval.modeling.bert_ruber import BertRuberConfig, BertRuberModel

    opts, out, encoder = run.opts, run.out, run.setup
    began = time.perf_counter()
    train_pairs, val_pairs = prepared_pairs(out)
    emb = run_embeddings(opts, out, encoder)
    contexts, responses = pair_texts(train_pairs + val_pairs, opts.context_turns)
    emb.encode(contexts, responses, progress_bar=opts.progress_bar)
    data = build_head_data(train_pairs, val_pairs, emb, context_turns=opts.context_turns, seed=opts.seed)
    encode_seconds = time.perf_counter() - began
    recipe = (f"dialeval train bert-ruber: {len(train_pairs)} DailyDialog positives, uniform random negatives, "
              f"BCE, Adam lr {opts.learning_rate}")
    model = build_model(BertRuberConfig, BertRuberModel, data.dim, opts, encoder, recipe)
    pool_size = len(data.pool)
    epoch_batches, batches = positive_negative_batches(
        data, context=data.train_context, response=data.pool[data.train_gold], gold=data.train_gold,
        batch_size=opts.batch_size, seed=opts.seed,
        negatives=lambda gold, rng, epoch: uniform_negatives(gold, pool_size, rng))
    result = train_head(model, run, out=out, data=data, epoch_batches=epoch_batches, batches_per_epoch=batches,
                        epochs=opts.epochs, learning_rate=opts.learning_rate, weight_decay=opts.weight_decay)
    seen_fields(run, result, model)
    if not result.finished:
        return run.stopped(result)
    calibrate_checkpoint(out / "best", data.val_context, data.val_response, seed=opts.seed)
    return run.finish(result, opts.selection, {
        "train_positives": len(train_pairs), "distinct_train_responses": pool_size,
        "validation_positives": len(val_pairs), "encode_seconds": round(encode_seconds, 1), "embeddings": emb.stats,
    }, encoder=encoder.record())

"""GRADE's training recipe: ``dialeval train grade``.

Preparation (needs the data directory, spaCy, BM25 and the encoder; ``--prepare-only`` stops after it) writes
into the output directory, the manifest ``prepared.json`` last (:mod:`dialeval.training.prepared`):

1. ``keywords.json``: keyword IDF fitted on all DailyDialog utterances (train + validation + test, as the
   original);
2. ``graph/``: the ConceptNet graph tables (:class:`~dialeval.metrics.grade.tables.GraphTables`; built once per
   data and encoder into the GRADE cache folder, :func:`~dialeval.metrics.grade.cache.default_cache_dir`);
3. ``pair_texts.json.gz`` + ``pairs.npz``: training and validation pairs with one lexical (BM25) and one embedding
   negative per positive (:mod:`~dialeval.metrics.grade.data`), subsampled to ``max_positives`` /
   ``max_val_positives``, each distinct text stored once (:class:`~dialeval.metrics.grade.data.PairTable`) with
   its keywords (spaCy) when the graph branch is on.

Training reads only that folder, the encoder package (tokenizer, frozen base weights) and torch: no data directory,
spaCy, BM25 or ``datasets``, so a folder prepared here trains on another machine. A folder without a manifest is
prepared in place first; one whose manifest disagrees with the options is refused (one line naming the option).

4. batches: ``[CLS] context [SEP] response [SEP]`` tokenised and the graph features computed from the stored
   keywords and tables (:class:`~dialeval.metrics.grade.features.GraphFeaturizer`; in ``--dataloader-workers``
   processes when > 0); margin ranking loss (margin 0.1) between the positive and negative scores (``--loss``
   adds or substitutes binary cross-entropy, :func:`pair_loss`), AdamW, linear warm-up (10%) and decay, gradient
   clipping 10, batch 16 pairs, seed 71; ``--context-copies`` / ``--random-negatives`` add pairs at train time
   (:func:`~dialeval.metrics.grade.data.with_extra_negatives`); validation every ``eval_every`` steps
   (:func:`validation_metrics`); the checkpoint with the lowest validation ranking loss is kept (as the original),
   or with the highest ``val_pooled_auc`` (``--select-by``).
   ``--max-minutes`` saves the full state and stops (rerun to resume); ``summary.json`` records the device and
   the ranking pairs seen.

Measured at the default options (12,000 positives, 500 validation positives) on the shared 2-core CPU:
the prepared folder held 12.5 MB (graph tables 11.0 MB, 6.2 MB since the tables' version 2,
``pair_texts.json.gz`` 1.25 MB for 39,968 distinct texts with their keywords, ``pairs.npz`` 0.13 MB, ``keywords.json`` 0.18 MB). Preparation took 24 minutes on the
busy machine, 10 of them building the graph tables' MiniLM node vectors (cached for the next preparation).
Building the 1,500 training batches of an epoch from the stored keywords takes 27 s from cold caches (18 ms per
batch of 16 pairs, 4 ms of it tokenising and padding) and 7.4 ms per batch once the per-concept caches are warm,
so the graph is computed at train time rather than stored per pair; ``--dataloader-workers`` hides it on a GPU.

The best checkpoint is written as a *small* checkpoint: the fine-tuned top encoder layers and every non-encoder
module in float16 (the frozen lower layers come from the encoder's package at load time), beside the keyword IDF
and graph tables the scorer needs.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...backbone import Encoder
from ...backbone.encoder import base_encoder_fields, encoder_record, resolve_encoder_path
from ...ranking import auc
from ...training import half_state_dict, replace_checkpoint, train, training_device
from ...training.buckets import length_bucketed_batches
from ...training.frozen_cache import frozen_state_cache
from ...training.prepared import write_manifest
from ...training.recipe import RecipeRun, learning_rate_groups, run_recipe
from .data import PairTable, build_pairs, context_windows, with_extra_negatives
from .features import GraphFeaturizer
from .inputs import (
    CONTEXT_TURNS,
    GRAPH_DIR,
    KEYWORDS_FILE,
    GradeInputBuilder,
    base_tokenizer,
    pair_template,
    to_device,
)
from .keywords import KeywordExtractor
from .options import GradeTrainingOptions
from .tables import GraphTables

METRIC = "grade"
#: What ``pairs_seen`` in ``summary.json`` counts.
PAIRS_SEEN_UNIT = "ranking pairs (context, positive response, negative response)"
VALIDATION_CHUNK = 64
#: Margin of the pairwise ranking loss (the original's).
MARGIN = 0.1


def _dialogues(split: str, data_dir: str | Path | None) -> list[list[str]]:
    from ...benchmarks import load_benchmark

    return list(load_benchmark("dailydialog", split=split, data_dir=data_dir)["utterances"])


def prepare(opts: GradeTrainingOptions) -> dict[str, Any]:
    """Steps 1-3 into ``opts.output_dir``; writes the manifest last and returns it."""
    from ...benchmarks.dailydialog import DD_SPLITS
    from ...paths import resolve_data_dir
    from .conceptnet import CN100K_FILES, CN100K_FOLDER

    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    encoder = Encoder(opts.encoder, device=training_device(opts.device))  # first: a missing device fails early
    data_dir = resolve_data_dir(opts.data_dir)
    dialogues = {split: _dialogues(split, data_dir) for split in DD_SPLITS}
    kw_path = out / KEYWORDS_FILE
    if kw_path.exists():  # fitted by an earlier, interrupted preparation (it depends on the corpus only)
        extractor = KeywordExtractor.load(kw_path)
    else:
        extractor = KeywordExtractor().fit([u for split in DD_SPLITS for d in dialogues[split] for u in d])
        extractor.save(kw_path)
    tables = GraphTables.build(data_dir)  # built once per data and encoder (the user's GRADE cache folder)
    graph_files = tables.save(out / GRAPH_DIR)
    splits = {}
    for split, limit in (("train", opts.max_positives or None), ("validation", opts.max_val_positives)):
        splits[split] = build_pairs(context_windows(dialogues[split]), encoder=encoder, max_positives=limit,
                                    seed=opts.seed, length_matched=opts.length_matched)
    table = PairTable.from_pairs(splits)
    if opts.use_graph:  # one spaCy pass over every distinct text
        table.keywords = extractor.extract_batch(table.texts)
    files = [KEYWORDS_FILE, *(f"{GRAPH_DIR}/{name}" for name in graph_files), *table.save(out)]
    data_files = [*DD_SPLITS.values(), *(f"{CN100K_FOLDER}/{name}" for name in CN100K_FILES
                                         if (data_dir / CN100K_FOLDER / name).exists())]
    return write_manifest(out, metric=METRIC, options=opts, files=files, data_dir=data_dir, data_files=data_files)


def build_model(opts: GradeTrainingOptions, node_feature_dim: int):
    from dialeval.modeling.grade import (
        ENCODER_TYPES,
        GradeConfig,
        GradeModel,
        base_encoder_state_dict,
        is_adapter_weight,
    )

    config = GradeConfig(
        **base_encoder_fields(opts.encoder, model_types=ENCODER_TYPES),
        node_feature_dim=node_feature_dim,
        trainable_encoder_layers=opts.trainable_encoder_layers,
        max_seq_length=opts.max_seq_length,
        use_graph=opts.use_graph,
        use_khop=opts.use_khop,
        use_hop_attention=opts.use_hop_attention,
        pooling=opts.pooling,
        lora_rank=opts.lora_rank,
        lora_layers=opts.lora_layers,
    )
    torch.manual_seed(opts.seed)
    model = GradeModel(config)
    # the encoder's folder, which its recorded name may not lead the model code to (an installed named encoder)
    folder = resolve_encoder_path(opts.encoder)[0]
    missing, unexpected = model.load_state_dict(base_encoder_state_dict(folder), strict=False)
    # every encoder weight comes from the encoder, but the new adapters (--lora-rank)
    not_encoder = [k for k in missing if k.startswith("encoder.") and not is_adapter_weight(k)]
    if not_encoder or unexpected:
        raise RuntimeError(f"base encoder did not fit: missing {not_encoder[:5]}, unexpected {unexpected[:5]}")
    model.freeze_encoder()
    return model


def learns_at_head_rate(name: str) -> bool:
    """Parameters trained at ``--head-learning-rate``: everything outside the encoder, and the encoder's low-rank
    adapters (new weights, like the heads); the pretrained encoder layers get ``--learning-rate``."""
    from dialeval.modeling.grade import is_adapter_weight

    return not name.startswith("encoder.") or is_adapter_weight(name)


def pair_loss(pos, neg, kind: str) -> torch.Tensor:
    """The training loss of a batch of (positive, negative) outputs: ``pairwise`` margin ranking (margin
    :data:`MARGIN`) on the scores, ``pointwise`` binary cross-entropy on the logits (positives 1, negatives 0), or
    ``both`` summed."""
    total = pos.score.new_zeros(())
    if kind in ("pairwise", "both"):
        total = total + torch.clamp(MARGIN - (pos.score - neg.score), min=0).mean()
    if kind in ("pointwise", "both"):
        logits = torch.cat([pos.logits, neg.logits])
        labels = torch.cat([torch.ones_like(pos.logits), torch.zeros_like(neg.logits)])
        total = total + torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
    return total


def validation_metrics(s_pos: torch.Tensor, s_neg: torch.Tensor) -> dict[str, float]:
    """Ranking loss and pair accuracy of aligned positive/negative scores, and the AUC of all positives against all
    negatives pooled over contexts (ties count half): a model that only orders replies within a context can rank
    its pairs well and still score poorly here."""
    return {"val_ranking_loss": torch.clamp(MARGIN - (s_pos - s_neg), min=0).mean().item(),
            "val_pair_accuracy": (s_pos > s_neg).float().mean().item(),
            "val_pooled_auc": auc(s_pos.cpu().numpy(), s_neg.cpu().numpy())}


def save_small_checkpoint(model, path: Path, resources_dir: Path) -> None:
    """fp16 trainable weights + config + the keyword IDF and graph tables the scorer needs."""
    replace_checkpoint(model, path, state_dict=half_state_dict(model.trainable_state_dict()))
    shutil.copy(resources_dir / KEYWORDS_FILE, path / KEYWORDS_FILE)


def row_lengths(texts: list[str], arrays: dict[str, np.ndarray], tokenizer, max_seq_length: int) -> np.ndarray:
    """Tokens of each pair of ``arrays`` (one split of a :class:`~dialeval.metrics.grade.data.PairTable`): those of
    the longer of its positive and its negative input, each ``[CLS] context [SEP] response [SEP]`` (the tokenizer's
    :func:`~dialeval.metrics.grade.inputs.pair_template`) of the last two context turns cut to ``max_seq_length``
    (each text tokenised once, a context's turns apart). ``--length-buckets``
    sorts by it: on the full training set, batches of pairs of similar length by this key held 108 tokens per pair
    (positive and negative input as padded) against 121 sorted by the two inputs' sum and 196 in plain random
    batches, for 97 real ones."""
    used = np.unique(np.concatenate([np.asarray(arrays["context"])[:, -CONTEXT_TURNS:].ravel(),
                                     arrays["positive"], arrays["negative"]]))
    counts = np.zeros(len(texts), dtype=np.int64)
    ids = tokenizer([texts[i] for i in used], add_special_tokens=False, verbose=False)["input_ids"]
    counts[used] = [len(row) for row in ids]
    special = sum(map(len, pair_template(tokenizer)))
    context = counts[np.asarray(arrays["context"])[:, -CONTEXT_TURNS:]].sum(axis=1)
    return np.maximum(*(np.minimum(context + counts[np.asarray(arrays[side])] + special, max_seq_length)
                        for side in ("positive", "negative")))


class PairBatches:
    """Model inputs for rows of the splits of a prepared :class:`~dialeval.metrics.grade.data.PairTable`, built on
    the CPU: tokens by the encoder's tokenizer, graph features from the stored keywords and the graph tables."""

    def __init__(self, texts: list[str], splits: dict[str, dict[str, np.ndarray]],
                 builder: GradeInputBuilder) -> None:
        self.texts, self.splits, self.builder = texts, splits, builder

    def __call__(self, split: str, rows) -> tuple[dict[str, Any], dict[str, Any]]:
        """(positive inputs, negative inputs) of the pairs ``rows`` of ``split``."""
        a, texts = self.splits[split], self.texts
        contexts = [[texts[j] for j in a["context"][i]] for i in rows]
        pos = self.builder.batch([(c, texts[a["positive"][i]]) for c, i in zip(contexts, rows)])
        neg = self.builder.batch([(c, texts[a["negative"][i]]) for c, i in zip(contexts, rows)])
        return pos, neg


def train_prepared(run: RecipeRun[GradeTrainingOptions]) -> dict[str, Any]:
    """Step 4 from the prepared files in the run folder."""
    opts, out = run.opts, run.out
    table = PairTable.load(out)
    tables = GraphTables.load(out / GRAPH_DIR)
    featurizer = GraphFeaturizer(tables, KeywordExtractor.load(out / KEYWORDS_FILE),
                                 keywords=table.keyword_map() if opts.use_graph else None)
    model = build_model(opts, node_feature_dim=tables.dim)
    builder = GradeInputBuilder(base_tokenizer(model.config.base_encoder), featurizer,
                                max_seq_length=opts.max_seq_length, use_graph=opts.use_graph)
    splits = dict(table.splits)
    extra = [kind for kind, wanted in (("context_copy", opts.context_copies), ("random", opts.random_negatives))
             if wanted]
    if extra:
        splits["train"] = with_extra_negatives(splits["train"], extra, seed=opts.seed)
    inputs = PairBatches(table.texts, splits, builder)
    n_train, n_val = (len(splits[s]["positive"]) for s in ("train", "validation"))
    steps_per_epoch = n_train // opts.batch_size  # batches per epoch

    def permutation(epoch: int) -> np.ndarray:
        return np.random.default_rng(opts.seed + epoch).permutation(n_train)

    if opts.length_buckets:
        _, bucketed = length_bucketed_batches(
            row_lengths(table.texts, splits["train"], builder.tokenizer, opts.max_seq_length),
            batch_size=opts.batch_size, gradient_accumulation=opts.gradient_accumulation, seed=opts.seed,
            pool=opts.length_buckets, permutation=permutation)

    def epoch_batches(epoch: int):
        if opts.length_buckets:
            yield from (rows.tolist() for rows in bucketed(epoch))
            return
        order = permutation(epoch)
        for start in range(0, steps_per_epoch * opts.batch_size, opts.batch_size):
            yield order[start:start + opts.batch_size].tolist()

    def collate(rows: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
        return inputs("train", rows)

    cache = frozen_state_cache(model, opts)

    def loss_fn(model, batch) -> torch.Tensor:
        device = next(model.parameters()).device
        pos, neg = (to_device(x, device) for x in batch)
        if cache is not None:  # --frozen-cache: a text's frozen-layer states are computed once
            pos, neg = (dict(x, frozen_states=cache.states(x["input_ids"], x["attention_mask"],
                                                           token_type_ids=x["token_type_ids"])) for x in (pos, neg))
        return pair_loss(model(**pos), model(**neg), opts.loss)

    validation: list[tuple[dict[str, Any], dict[str, Any]]] = []  # built at the first evaluation, then reused

    def evaluate_fn(model) -> dict[str, float]:
        device = next(model.parameters()).device
        if not validation:
            validation.extend(inputs("validation", list(range(start, min(start + VALIDATION_CHUNK, n_val))))
                              for start in range(0, n_val, VALIDATION_CHUNK))
        scores = []
        with torch.inference_mode():
            for pos, neg in validation:
                scores.append((model(**to_device(pos, device)).score, model(**to_device(neg, device)).score))
        s_pos, s_neg = (torch.cat(column).float().cpu() for column in zip(*scores))
        return validation_metrics(s_pos, s_neg)

    def save_best(model, path: Path) -> None:
        save_small_checkpoint(model, path, out)
        tables.save(path / GRAPH_DIR)

    args = run.arguments(steps_per_epoch=steps_per_epoch, head_learning_rate=opts.head_learning_rate)
    result = train(
        model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=steps_per_epoch, loss_fn=loss_fn,
        evaluate_fn=evaluate_fn, save_best=save_best, selection_key=opts.select_by,
        greater_is_better=opts.select_by != "val_ranking_loss", resume=opts.resume, collate=collate,
        learning_rate_of=learning_rate_groups(opts, is_head=learns_at_head_rate),
    )
    run.examples_seen(result, model, key="pairs_seen", unit=PAIRS_SEEN_UNIT)
    if cache is not None:
        run.seen["frozen_cache"] = cache.report()
        cache.close()
    if not result.finished:
        return run.stopped(result)
    return run.finish(result, opts.select_by, {"train_pairs": n_train, "validation_pairs": n_val},
                      encoder=encoder_record(opts.encoder))


def run(opts: GradeTrainingOptions) -> dict:
    """Prepare (unless ``opts.output_dir`` is prepared already), then train unless ``opts.prepare_only``; returns
    the summary (also written to ``<output_dir>/summary.json``), or ``{"prepared": True, **manifest}``."""
    return run_recipe(opts, metric=METRIC, prepare=prepare, train=train_prepared)

"""RADE's training recipe: ``dialeval train rade``.

Steps:
1. **Preparation** (needs the data directory; ``--prepare-only`` stops after it): the examples of each split
   (:mod:`.data`; stage 1: DailyDialog++ positives with graded synthetic candidates, train and validation; stage 2:
   the RADE sets in ``--sets``, train, validation and test) as ``examples_<split>.jsonl.gz``, then the manifest
   ``prepared.json``. Tokenising happens at train time, so a prepared folder trains on any machine.
2. **Model**: warm-started from the base encoder (the bundled MiniLM as encoder and decoder, cross-attention new)
   or, with ``--init-from``, from another run's ``best/`` (stage 2 after stage 1). The top
   ``--trainable-encoder-layers`` encoder layers train (or, with ``--lora-rank``, low-rank adapters in them), and
   the decoder and the regressor train; the rest stays the encoder package's.
3. **Training** on the shared loop: Adam (the paper's betas 0.98 / 0.97 and learning rate 5e-5; the new score
   regressor at ``--head-learning-rate``, 1e-3, adapters at ``--adapter-learning-rate``, 1e-4), batches in a
   seeded random order, the stage's loss (:mod:`.losses`; each term switchable). Validation every ``eval_every``
   steps and at the end: per set, (Pearson + Spearman) / 2 of the predicted candidate score against its label,
   averaged over the sets (``val_correlation``); the best is kept in ``best/`` (the trained weights and the
   decoder, to train further from), and a finished run writes ``scoring/``: the same model without its decoder,
   what training changed stored in float16, which is all scoring needs (the shipped checkpoint is such a folder).
4. **Report** (``summary.json``): the ``scoring/`` checkpoint's Pearson / Spearman / Kendall on each set's test split
   (stage 2) and validation split, with the training device and the examples seen.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ...backbone.encoder import base_encoder_fields, encoder_record
from ...training import TrainingOptionsError, on_model_device, replace_checkpoint, train
from ...training.buckets import epoch_batches_for
from ...training.frozen_cache import FrozenStateCache, frozen_state_cache
from ...training.prepared import write_manifest
from ...training.recipe import RecipeRun, device_first, learning_rate_groups, run_recipe
from .data import STAGE1_SOURCE, Example, load_examples, save_examples, stage1_examples, stage2_examples
from .inputs import RadeInputBuilder, base_tokenizer
from .losses import rade_loss
from .options import RadeTrainingOptions

METRIC = "rade"
SCORING_DIR = "scoring"
#: Stage 1 validates on at most this many contexts (four examples each).
STAGE1_VALIDATION_CONTEXTS = 400
PREDICT_BATCH = 64


def examples_file(split: str) -> str:
    return f"examples_{split}.jsonl.gz"


def splits_of(opts: RadeTrainingOptions) -> tuple[str, ...]:
    return ("train", "validation") if opts.stage == 1 else ("train", "validation", "test")


def prepare(opts: RadeTrainingOptions) -> dict:
    """Write the examples of every split and (last) the manifest into the run folder; returns the manifest."""
    from ...benchmarks.rade import source_path
    from ...paths import resolve_data_dir

    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    data_dir = resolve_data_dir(opts.data_dir)
    files = []
    for split in splits_of(opts):
        if opts.stage == 1:
            limit = (opts.max_stage1_contexts or None) if split == "train" else STAGE1_VALIDATION_CONTEXTS
            examples = stage1_examples(data_dir, split, max_contexts=limit, seed=opts.seed)
        else:
            examples = stage2_examples(data_dir, opts.set_list, split)
        if not examples:
            raise ValueError(f"no {split} examples for stage {opts.stage}: check the data directory ({data_dir})")
        save_examples(examples, out / examples_file(split))
        files.append(examples_file(split))
    data_files = [STAGE1_SOURCE] if opts.stage == 1 else [source_path(f"rade_{s}") for s in opts.set_list]
    return write_manifest(out, metric=METRIC, options=opts, files=files, data_dir=data_dir, data_files=data_files)


def build_model(opts: RadeTrainingOptions):
    """The model to train: ``--init-from``'s best checkpoint, or a warm start from the base encoder."""
    from ...modeling.rade import RadeConfig, RadeModel
    from ...scoring.checkpoints import resolve_checkpoint

    if opts.init_from:
        path = resolve_checkpoint(opts.init_from, METRIC, "dialeval train rade --stage 1")
        model = RadeModel.from_pretrained(path, dtype=torch.float32)
        fixed = {"base_encoder": base_encoder_fields(opts.encoder)["base_encoder"],
                 "max_seq_length": opts.max_seq_length, "max_reference_length": opts.max_reference_length,
                 "use_reference": opts.use_reference, "pooling": opts.pooling, "lora_rank": opts.lora_rank,
                 "regressor_dims": [opts.regressor_hidden]}
        if opts.lora_rank:  # the adapters sit in these layers
            fixed["trainable_encoder_layers"] = opts.trainable_encoder_layers
        differs = {k: (getattr(model.config, k), v) for k, v in fixed.items() if getattr(model.config, k) != v}
        if differs:
            raise TrainingOptionsError(f"--init-from {opts.init_from} was trained with other inputs: " + ", ".join(
                f"{k}={old} (now {new})" for k, (old, new) in differs.items()))
        if opts.generation and not model.config.use_decoder:
            raise TrainingOptionsError(f"--init-from {path} has no decoder (a scoring checkpoint): start from a run's "
                                       "best/, or train with --no-generation")
        model.config.trainable_encoder_layers = opts.trainable_encoder_layers
    else:
        config = RadeConfig(**base_encoder_fields(opts.encoder), max_seq_length=opts.max_seq_length, max_reference_length=opts.max_reference_length,
                            use_reference=opts.use_reference, pooling=opts.pooling, use_decoder=opts.generation,
                            trainable_encoder_layers=opts.trainable_encoder_layers, lora_rank=opts.lora_rank,
                            regressor_dims=[opts.regressor_hidden], regressor_dropout=opts.regressor_dropout)
        torch.manual_seed(opts.seed)
        model = RadeModel.from_base_encoder(config)
    model.freeze_for_training()
    return model


def learning_rates(opts: RadeTrainingOptions):
    """Each parameter's learning rate, by name: the encoder's low-rank adapters ``--adapter-learning-rate``, the
    score regressor ``--head-learning-rate``, the pretrained encoder and decoder weights ``--learning-rate``."""
    from ...modeling.rade import is_adapter_weight

    return learning_rate_groups(opts, is_head=lambda name: name.startswith("regressor."), is_adapter=is_adapter_weight)


def row_lengths(builder: RadeInputBuilder, examples: list[Example], generation: bool) -> np.ndarray:
    """Tokens of each example's rows as :class:`ExampleBatcher` builds them: the evaluator's input, and with
    ``generation`` the decoder's context and reference labels (``--length-buckets`` sorts by it; the builder's
    :attr:`~.inputs.RadeInputBuilder.truncated` count is left as it was)."""
    before = builder.truncated
    contexts = [e.context for e in examples]
    lengths = np.asarray([len(x.ids) for x in builder.evaluator_inputs(
        contexts, [e.reference for e in examples], [e.candidate for e in examples])], dtype=np.int64)
    if generation:
        lengths += [len(ids) for ids in builder.context_ids(contexts)]
        lengths += [len(ids) for ids in builder.reference_labels([e.reference for e in examples])]
    builder.truncated = before
    return lengths


class ExampleBatcher:
    """Examples -> model inputs (the evaluator's input; with ``generation``, the decoder's context and labels) and
    the [B, 2] labels (reference, candidate)."""

    def __init__(self, builder: RadeInputBuilder, generation: bool) -> None:
        self.builder, self.generation = builder, generation

    def collate(self, examples: list[Example]) -> dict[str, torch.Tensor]:
        contexts = [e.context for e in examples]
        batch = self.builder.evaluator_batch(self.builder.evaluator_inputs(
            contexts, [e.reference for e in examples], [e.candidate for e in examples]))
        if self.generation:
            batch.update(self.builder.generation_batch(self.builder.context_ids(contexts),
                                                       self.builder.reference_labels([e.reference for e in examples])))
        batch["labels"] = torch.tensor([e.labels for e in examples], dtype=torch.float32)
        return batch


@torch.inference_mode()
def predict(model, builder: RadeInputBuilder, examples: list[Example]) -> np.ndarray:
    """[N, 2] predicted (reference, candidate) scores, in order (length-sorted batches inside)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    inputs = builder.evaluator_inputs([e.context for e in examples], [e.reference for e in examples],
                                      [e.candidate for e in examples])
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i].ids))
    out = np.zeros((len(inputs), 2), dtype=np.float64)
    for start in range(0, len(order), PREDICT_BATCH):
        rows = order[start:start + PREDICT_BATCH]
        batch = {k: v.to(device) for k, v in builder.evaluator_batch([inputs[i] for i in rows]).items()}
        out[rows] = model(**batch).scores.double().cpu().numpy()
    model.train(was_training)
    return out


def correlations(examples: list[Example], predicted: np.ndarray) -> dict[str, dict[str, float]]:
    """Per source (and ``all``): Pearson, Spearman, Kendall of the predicted candidate scores with the labels."""
    from scipy import stats

    sources = np.array([e.source for e in examples])
    labels = np.array([e.candidate_score for e in examples])
    out = {}
    for name in [*dict.fromkeys(sources.tolist()), "all"]:
        sel = np.ones(len(examples), bool) if name == "all" else sources == name
        x, y = predicted[sel, 1], labels[sel]
        out[name] = {"n": int(sel.sum()), "pearson": float(stats.pearsonr(x, y)[0]),
                     "spearman": float(stats.spearmanr(x, y)[0]), "kendall": float(stats.kendalltau(x, y)[0])}
    return out


def validation_metrics(examples: list[Example], predicted: np.ndarray) -> dict[str, float]:
    """``val_correlation``: the mean over sources of (Pearson + Spearman) / 2; plus the candidate MSE."""
    per = {k: v for k, v in correlations(examples, predicted).items() if k != "all"}
    labels = np.array([e.candidate_score for e in examples])
    return {"val_correlation": float(np.mean([(v["pearson"] + v["spearman"]) / 2 for v in per.values()])),
            "val_candidate_mse": float(np.mean((predicted[:, 1] - labels) ** 2))}


def with_frozen_states(cache: FrozenStateCache, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``--frozen-cache``: ``batch`` with the ``frozen_states`` of its evaluator inputs and, with the generation
    inputs, the ``context_frozen_states`` of its contexts (a context of several examples is computed once)."""
    out = dict(batch, frozen_states=cache.states(batch["input_ids"], batch["attention_mask"],
                                                 token_type_ids=batch["token_type_ids"]))
    if "context_input_ids" in batch:
        out["context_frozen_states"] = cache.states(batch["context_input_ids"], batch["context_attention_mask"])
    return out


def run(opts: RadeTrainingOptions) -> dict:
    """Prepare (unless ``output_dir`` holds a prepared run) and train RADE; returns a summary (also written to
    ``<output_dir>/summary.json``), or ``{"prepared": True, **manifest}`` with ``prepare_only``."""
    return run_recipe(opts, metric=METRIC, prepare=prepare, setup=device_first, train=train_prepared)


def train_prepared(run: RecipeRun[RadeTrainingOptions]) -> dict:
    """Train on the prepared examples, write the scoring checkpoint and report its correlations."""
    opts, out = run.opts, run.out
    sets = {split: load_examples(out / examples_file(split)) for split in splits_of(opts)}
    model = build_model(opts)
    builder = RadeInputBuilder(base_tokenizer(model.config.base_encoder), max_seq_length=opts.max_seq_length,
                               max_reference_length=opts.max_reference_length, use_reference=opts.use_reference)
    batcher = ExampleBatcher(builder, generation=opts.generation)
    weights = opts.loss_weights()
    train_examples = sets["train"]
    batches_per_epoch, epoch_batches = epoch_batches_for(
        lambda: row_lengths(builder, train_examples, opts.generation), len(train_examples), opts)

    cache = frozen_state_cache(model, opts)
    if cache is not None:
        model.frozen_layers()  # a seq2seq backbone has none: an error now, not at the first step

    def collate(indices: np.ndarray) -> dict[str, torch.Tensor]:
        return batcher.collate([train_examples[i] for i in indices])

    def loss_fn(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        batch = on_model_device(model, batch)
        labels = batch.pop("labels")
        if cache is not None:
            batch = with_frozen_states(cache, batch)
        output = model(**batch)
        total, _ = rade_loss(output.scores.float(), labels, output.generation_loss, weights)
        return total

    def evaluate_fn(model) -> dict[str, float]:
        return validation_metrics(sets["validation"], predict(model, builder, sets["validation"]))

    def save_best(model, path: Path) -> None:
        replace_checkpoint(model, path, trainable_only=True)

    steps_per_epoch = batches_per_epoch // opts.gradient_accumulation
    args = run.arguments(steps_per_epoch=steps_per_epoch, head_learning_rate=opts.head_learning_rate,
                         weight_decay=0.0, warmup_ratio=opts.warmup_ratio, max_grad_norm=1.0, optimizer="adam",
                         adam_betas=(opts.adam_beta1, opts.adam_beta2))
    result = train(model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=batches_per_epoch,
                   loss_fn=loss_fn, evaluate_fn=evaluate_fn, save_best=save_best, selection_key="val_correlation",
                   greater_is_better=True, resume=opts.resume, collate=collate,
                   learning_rate_of=learning_rates(opts))
    device = next(model.parameters()).device
    run.examples_seen(result, model)
    if cache is not None:
        run.seen["frozen_cache"] = cache.report()
        cache.close()
    if not result.finished:
        return run.stopped(result)

    from ...modeling.rade import RadeModel

    best = RadeModel.from_pretrained(out / "best", dtype=torch.float32)
    scoring = out / SCORING_DIR
    replace_checkpoint(best, scoring, trainable_only=True, drop_decoder=best.config.use_decoder, half=True)
    # the report is of the checkpoint as it ships (float16 weights, computed in float32)
    shipped = RadeModel.from_pretrained(scoring, dtype=torch.float32).to(device)
    reports = {f"{split}_correlations": correlations(sets[split], predict(shipped, builder, sets[split]))
               for split in splits_of(opts) if split != "train"}
    return run.finish(result, "val_correlation", {
        "stage": opts.stage, "examples": {split: len(v) for split, v in sets.items()},
        "loss_weights": asdict(weights), "steps_per_epoch": steps_per_epoch, **reports,
        "scoring_checkpoint": str(scoring),
    }, encoder=encoder_record(opts.encoder))

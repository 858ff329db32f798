"""The AMR evaluator's training recipe: ``dialeval train amr-eval``.

Steps:
1. **Preparation** (needs the data directory and the graph source; ``--prepare-only`` stops after it): the examples
   of each split (:mod:`.data`: train and validation from DailyDialog++'s dev contexts, test from its test file with
   both negative kinds), the graph of every distinct utterance from ``--graph-source`` (through the per-utterance
   cache) in ``graphs.jsonl.gz``, and the relation labels that get an embedding (the ``--max-relations`` most frequent
   in the training graphs, context joins included) in ``relations.json``, beside how well reply length alone tells
   the training classes apart with and without the length-balancing weights (``train_length_cue``); then the
   manifest. Training needs neither
   spaCy nor the data afterwards.
2. **Model**: `AmrEvalModel` with the bundled MiniLM; the top ``--trainable-encoder-layers`` train through adapters
   (``--lora-rank``), the graph branch, gate and classifier are new. ``--no-graph`` / ``--no-gate`` are the
   ablations.
3. **Training** on the shared loop: AdamW, the loss of :func:`slm_loss` (cross-entropy on the two classes plus
   ``--contrastive-weight`` times the contrastive loss; 0 is the ablation), each example weighted by
   :func:`~.data.length_balance_weights` (``--no-length-balance``: all 1). Validation every ``eval_every`` steps:
   accuracy at probability 0.5 and the AUC of positives against each negative kind trained on, and their means over
   the kinds (``val_accuracy``, the selection key, and ``val_auc``).
   The best model is kept in ``best/`` (what training changed, float16: the checkpoint that ships).
4. **Report** (``summary.json``): the best checkpoint's accuracy and AUC on the test split, positives against
   adversarial and against random negatives, and on validation.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from ...ranking import auc
from ...backbone.encoder import base_encoder_fields, base_tokenizer, encoder_record
from ...training import on_model_device, recipe_batches, replace_checkpoint, train
from ...training.prepared import write_manifest
from ...training.recipe import RecipeRun, device_first, learning_rate_groups, run_recipe
from .data import (
    Example,
    dailydialog_pp_examples,
    length_balance_weights,
    length_cue,
    load_examples,
    save_examples,
)
from .graphs import SimpleGraph
from .inputs import AmrEvalInputBuilder, join_context
from .options import AmrEvalTrainingOptions

METRIC = "amr_eval"
GRAPHS_FILE = "graphs.jsonl.gz"
RELATIONS_FILE = "relations.json"
PREDICT_BATCH = 64
SPLITS = ("train", "validation", "test")


def examples_file(split: str) -> str:
    return f"examples_{split}.jsonl.gz"


def utterances(examples: list[Example]) -> list[str]:
    """Every distinct turn and response of ``examples``, in order of first appearance."""
    return list(dict.fromkeys(t for e in examples for t in (*e.context, e.response)))


def save_graphs(graphs: dict[str, SimpleGraph], path: Path) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for text, graph in graphs.items():
            fh.write(json.dumps({"text": text, "graph": json.loads(graph.to_json())}) + "\n")


def load_graphs(path: Path) -> dict[str, SimpleGraph]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return {row["text"]: SimpleGraph.from_json(row["graph"]) for row in map(json.loads, fh)}


def graph_pair(example: Example, graphs: dict[str, SimpleGraph]) -> tuple[SimpleGraph, SimpleGraph]:
    """(context graph, response graph) of an example."""
    return join_context([graphs[t] for t in example.context]), graphs[example.response]


def relation_vocabulary(pairs: list[tuple[SimpleGraph, SimpleGraph]], size: int) -> list[str]:
    """The ``size`` most frequent relation labels of ``pairs`` (ties by label)."""
    counts = Counter(r for pair in pairs for g in pair for _, _, r in g.edges)
    return [r for r, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]]


def prepare(opts: AmrEvalTrainingOptions) -> dict:
    """Examples, graphs and relation labels into the run folder, then (last) the manifest; returns it."""
    from ...benchmarks.dailydialog import DDPP_SPLITS
    from ...paths import resolve_data_dir
    from .graph_cache import CachedGraphs
    from .graph_sources import load_graph_source

    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    data_dir = resolve_data_dir(opts.data_dir)
    sets = {}
    for split in SPLITS:
        negatives = ("adversarial", "random") if split == "test" else opts.negative_kinds
        sets[split] = dailydialog_pp_examples(data_dir, split, negatives=negatives)
        save_examples(sets[split], out / examples_file(split))
    texts = utterances([e for split in SPLITS for e in sets[split]])
    source = CachedGraphs(load_graph_source(opts.graph_source, **opts.graph_source_options()))
    graphs = dict(zip(texts, source.graphs(texts)))
    save_graphs(graphs, out / GRAPHS_FILE)
    relations = relation_vocabulary([graph_pair(e, graphs) for e in sets["train"]], opts.max_relations)
    # how much reply length alone tells the training classes apart, as they are and length-balanced (0.5: nothing)
    cue = {"plain": length_cue(sets["train"]),
           "length_balanced": length_cue(sets["train"], length_balance_weights(sets["train"]))}
    (out / RELATIONS_FILE).write_text(json.dumps({"graph_source": source.signature(), "relations": relations,
                                                  "utterances": len(texts), "cache_hit_rate": source.hit_rate,
                                                  "train_length_cue": cue}, indent=1))
    files = [examples_file(s) for s in SPLITS] + [GRAPHS_FILE, RELATIONS_FILE]
    return write_manifest(out, metric=METRIC, options=opts, files=files, data_dir=data_dir,
                          data_files=list(DDPP_SPLITS.values()))


def build_model(opts: AmrEvalTrainingOptions, relations: list[str], graph_source: str):
    from ...modeling.amr_eval import AmrEvalConfig, AmrEvalModel

    config = AmrEvalConfig(**base_encoder_fields(opts.encoder), relations=relations, graph_source=graph_source, max_seq_length=opts.max_seq_length,
                           hidden_size=opts.hidden_size,
                           graph_layers=opts.graph_layers, graph_heads=4, use_graph=opts.use_graph,
                           use_gate=opts.use_gate, pooling=opts.pooling,
                           trainable_encoder_layers=opts.trainable_encoder_layers,
                           lora_rank=opts.lora_rank)
    torch.manual_seed(opts.seed)
    model = AmrEvalModel.from_base_encoder(config)
    model.freeze_for_training()
    return model


def contrastive_loss(text: torch.Tensor, graph: torch.Tensor, labels: torch.Tensor, scale: float) -> torch.Tensor:
    """In-batch contrastive loss over the positives: each positive's text vector should be closer (cosine, times
    ``scale``) to its own graph vector than to the other positives' graph vectors, and the other way round
    (cross-entropy both ways, averaged). Zero with fewer than two positives. The original's version was wrapped in
    a new tensor and so never trained anything; this one does."""
    keep = labels == 1
    if int(keep.sum()) < 2:
        return text.new_zeros(())
    t = torch.nn.functional.normalize(text[keep], dim=-1)
    g = torch.nn.functional.normalize(graph[keep], dim=-1)
    logits = scale * t @ g.T
    target = torch.arange(len(t), device=t.device)
    return 0.5 * (torch.nn.functional.cross_entropy(logits, target) +
                  torch.nn.functional.cross_entropy(logits.T, target))


def slm_loss(output, labels: torch.Tensor, *, contrastive_weight: float, scale: float,
             weights: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy on the two classes (the ``weights``-weighted mean over the batch when given, e.g.
    :func:`~.data.length_balance_weights`), plus ``contrastive_weight`` times :func:`contrastive_loss` (with the
    graph branch)."""
    if weights is None:
        loss = torch.nn.functional.cross_entropy(output.logits.float(), labels)
    else:
        per_item = torch.nn.functional.cross_entropy(output.logits.float(), labels, reduction="none")
        loss = (per_item * weights).sum() / weights.sum()
    if contrastive_weight and output.graph_vector is not None:
        loss = loss + contrastive_weight * contrastive_loss(output.text_vector.float(), output.graph_vector.float(),
                                                            labels, scale)
    return loss


class ExampleBatcher:
    """Examples -> model inputs (text, and graphs with the graph branch) and labels."""

    def __init__(self, builder: AmrEvalInputBuilder, graphs: dict[str, SimpleGraph], use_graph: bool) -> None:
        self.builder, self.graphs, self.use_graph = builder, graphs, use_graph

    def inputs(self, examples: list[Example]) -> dict[str, torch.Tensor]:
        texts = self.builder.text_inputs([e.context for e in examples], [e.response for e in examples])
        pairs = [graph_pair(e, self.graphs) for e in examples] if self.use_graph else None
        return self.builder.batch(texts, pairs)

    def collate(self, examples: list[Example]) -> dict[str, torch.Tensor]:
        batch = self.inputs(examples)
        batch["labels"] = torch.tensor([e.label for e in examples], dtype=torch.long)
        return batch


@torch.inference_mode()
def predict(model, batcher: ExampleBatcher, examples: list[Example]) -> np.ndarray:
    """The probability of class 1 per example, in order (length-sorted batches inside)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    order = sorted(range(len(examples)), key=lambda i: len(" ".join((*examples[i].context, examples[i].response))))
    out = np.zeros(len(examples), dtype=np.float64)
    for start in range(0, len(order), PREDICT_BATCH):
        rows = order[start:start + PREDICT_BATCH]
        batch = {k: v.to(device) for k, v in batcher.inputs([examples[i] for i in rows]).items()}
        out[rows] = torch.softmax(model(**batch).logits.float(), dim=-1)[:, 1].cpu().numpy()
    model.train(was_training)
    return out


def discrimination(examples: list[Example], probability: np.ndarray) -> dict[str, dict[str, float]]:
    """Per negative kind present: accuracy at 0.5 over the positives and those negatives, and the AUC of positives
    against them (ties count half)."""
    labels = np.array([e.label for e in examples])
    kinds = np.array([e.kind for e in examples])
    pos = probability[labels == 1]
    out = {}
    for kind in [k for k in ("adversarial", "random") if (kinds == k).any()]:
        neg = probability[kinds == kind]
        accuracy = ((pos >= 0.5).sum() + (neg < 0.5).sum()) / (len(pos) + len(neg))
        out[kind] = {"n": int(len(pos) + len(neg)), "accuracy": float(accuracy), "auc": auc(pos, neg)}
    return out


def run(opts: AmrEvalTrainingOptions) -> dict:
    """Prepare (unless ``output_dir`` holds a prepared run) and train; returns a summary (also written to
    ``<output_dir>/summary.json``), or ``{"prepared": True, **manifest}`` with ``prepare_only``."""
    return run_recipe(opts, metric=METRIC, prepare=prepare, setup=device_first, train=train_prepared)


def train_prepared(run: RecipeRun[AmrEvalTrainingOptions]) -> dict:
    """Train on the prepared examples and graphs and report the best model's discrimination."""
    opts, out = run.opts, run.out
    sets = {split: load_examples(out / examples_file(split)) for split in SPLITS}
    graphs = load_graphs(out / GRAPHS_FILE)
    prepared = json.loads((out / RELATIONS_FILE).read_text())
    model = build_model(opts, prepared["relations"], prepared["graph_source"])
    builder = AmrEvalInputBuilder(base_tokenizer(model.config.base_encoder), model.config)
    batcher = ExampleBatcher(builder, graphs, use_graph=opts.use_graph)
    train_examples = sets["train"]
    weights = (length_balance_weights(train_examples) if opts.length_balance
               else np.ones(len(train_examples), dtype=np.float64))
    batches_per_epoch, epoch_batches = recipe_batches(len(train_examples), opts)

    def collate(indices: np.ndarray) -> dict[str, torch.Tensor]:
        batch = batcher.collate([train_examples[i] for i in indices])
        batch["weights"] = torch.tensor(weights[indices], dtype=torch.float32)
        return batch

    def loss_fn(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        batch = on_model_device(model, batch)
        labels, item_weights = batch.pop("labels"), batch.pop("weights")
        return slm_loss(model(**batch), labels, contrastive_weight=opts.contrastive_weight,
                        scale=opts.contrastive_scale, weights=item_weights)

    def evaluate_fn(model) -> dict[str, float]:
        report = discrimination(sets["validation"], predict(model, batcher, sets["validation"]))
        per_kind = {f"val_{kind}_{key}": report[kind][key] for kind in report for key in ("accuracy", "auc")}
        return {"val_accuracy": float(np.mean([r["accuracy"] for r in report.values()])),
                "val_auc": float(np.mean([r["auc"] for r in report.values()])), **per_kind}

    def save_best(model, path: Path) -> None:
        replace_checkpoint(model, path, trainable_only=True, half=True)

    from ...modeling.amr_eval import is_adapter_weight

    steps_per_epoch = batches_per_epoch // opts.gradient_accumulation
    args = run.arguments(steps_per_epoch=steps_per_epoch, weight_decay=0.01, warmup_ratio=0.1, max_grad_norm=1.0,
                         optimizer="adamw")
    result = train(model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=batches_per_epoch,
                   loss_fn=loss_fn, evaluate_fn=evaluate_fn, save_best=save_best, selection_key="val_accuracy",
                   greater_is_better=True, resume=opts.resume, collate=collate,
                   learning_rate_of=learning_rate_groups(opts, is_head=lambda name: not name.startswith("encoder."),
                                                         is_adapter=is_adapter_weight))
    device = next(model.parameters()).device
    run.examples_seen(result, model)
    if not result.finished:
        return run.stopped(result)

    from ...modeling.amr_eval import AmrEvalModel

    best = AmrEvalModel.from_pretrained(out / "best", dtype=torch.float32).to(device)
    reports = {f"{split}_discrimination": discrimination(sets[split], predict(best, batcher, sets[split]))
               for split in ("validation", "test")}
    return run.finish(result, "val_accuracy", {
        "examples": {split: len(v) for split, v in sets.items()}, "graph_source": prepared["graph_source"],
        "relations": len(prepared["relations"]), "steps_per_epoch": steps_per_epoch, **reports,
        "truncated_inputs": builder.truncated,
    }, encoder=encoder_record(opts.encoder))

"""The small AMR parser's training recipe: ``dialeval train amr-parser``.

Steps:
1. **Preparation** (needs the data directory; ``--prepare-only`` stops after it): the gold graphs of ``--corpora``
   (train, dev and test splits, :func:`~.amr_corpora.read_amr_corpus`), simplified and lower-cased, in
   ``examples_<split>.jsonl.gz``; the output vocabulary (``vocabulary.json``: relation tokens of the training graphs,
   word pieces of the training graphs and sentences, :class:`~.parser.ParserVocabulary`); then the manifest.
2. **Model**: ``AmrParserModel.from_base_encoder`` with the bundled MiniLM (``--decoder-layers`` decoder layers
   warm-started from its first layers, cross-attention new); each relation token starts as the mean embedding of
   its word pieces. The top ``--trainable-encoder-layers`` encoder layers train at ``--learning-rate``, the decoder
   and output layer at ``--head-learning-rate``. With ``--lora-rank`` the package's weights stay frozen and
   low-rank adapters train instead, at ``--adapter-learning-rate`` (`AmrParserConfig`).
3. **Training** on the shared loop: AdamW, token cross-entropy of the output tokens and the end token. Validation
   every ``eval_every`` steps parses the dev sentences greedily: ``val_smatch`` (Smatch of simplified graphs against
   the gold ones, :func:`~.parser.graph_smatch`; the selection key) and ``val_loss``. The best model is kept in
   ``best/``: what training changed, in float16 (loading takes the frozen encoder weights from their package).
4. **Report** (``summary.json``): the best checkpoint's Smatch per dev and test corpus (pooled too, with several;
   :func:`~.parser.smatch_by_corpus`), and its parse speed.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...backbone.encoder import base_encoder_fields, base_tokenizer, encoder_record
from ...training import on_model_device, recipe_batches, replace_checkpoint, train
from ...training.prepared import load_records, save_records, write_manifest
from ...training.recipe import RecipeRun, device_first, learning_rate_groups, run_recipe
from .graphs import SimpleGraph
from .options import AmrParserTrainingOptions
from .parser import ParserVocabulary, graph_smatch, lowercased, parse_sentences, smatch_by_corpus

METRIC = "amr_parser"
VOCABULARY_FILE = "vocabulary.json"
SPLITS = ("train", "dev", "test")
PARSE_BATCH = 32


@dataclass(frozen=True)
class ParserExample:
    id: str
    corpus: str
    sentence: str
    graph: dict  # SimpleGraph JSON object


def examples_file(split: str) -> str:
    return f"examples_{split}.jsonl.gz"


def prepare(opts: AmrParserTrainingOptions) -> dict:
    """Examples and vocabulary into the run folder, then (last) the manifest; returns it."""
    from ...paths import resolve_data_dir
    from .amr_corpora import corpus_files, read_amr_corpus
    from .graphs import simplify

    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    data_dir = resolve_data_dir(opts.data_dir)
    sets: dict[str, list[ParserExample]] = {}
    for split in SPLITS:
        sets[split] = [
            ParserExample(gid, corpus, sentence,
                          json.loads(lowercased(simplify(text, item=f"{corpus}/{split} {gid}")).to_json()))
            for corpus in opts.corpus_names for gid, sentence, text in read_amr_corpus(corpus, split, data_dir)]
        save_records(sets[split], out / examples_file(split))
    tokenizer = base_tokenizer(opts.encoder)
    vocabulary = ParserVocabulary.build([SimpleGraph.from_json(e.graph) for e in sets["train"]],
                                        [e.sentence for e in sets["train"]], tokenizer)
    (out / VOCABULARY_FILE).write_text(json.dumps({"special_tokens": list(vocabulary.special_tokens),
                                                   "piece_ids": list(vocabulary.piece_ids)}, indent=1))
    files = [examples_file(s) for s in SPLITS] + [VOCABULARY_FILE]
    data_files = sorted({f for c in opts.corpus_names for s in SPLITS for f in corpus_files(c, s)})
    return write_manifest(out, metric=METRIC, options=opts, files=files, data_dir=data_dir, data_files=data_files)


def build_model(opts: AmrParserTrainingOptions, special_tokens: list[str], piece_ids: list[int], tokenizer):
    from ...modeling.amr_eval import AmrParserConfig, AmrParserModel

    config = AmrParserConfig(**base_encoder_fields(opts.encoder), special_tokens=special_tokens, piece_ids=piece_ids, decoder_layers=opts.decoder_layers,
                             trainable_encoder_layers=opts.trainable_encoder_layers, lora_rank=opts.lora_rank,
                             lora_alpha=opts.lora_alpha,
                             max_source_length=opts.max_source_length, max_target_length=opts.max_target_length)
    # a relation token starts where its word pieces are (":arg0-of" from "arg0-of"); the rest start at random
    starts = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t[1:])) if t.startswith(":") else []
              for t in special_tokens]
    torch.manual_seed(opts.seed)
    model = AmrParserModel.from_base_encoder(config, special_pieces=starts)
    model.freeze_for_training()
    return model


class ParserBatcher:
    """Sentences -> encoder inputs; graphs -> output ids ending with the end token (cut at the target length)."""

    def __init__(self, tokenizer, vocabulary: ParserVocabulary, config) -> None:
        self.tokenizer, self.vocabulary, self.config = tokenizer, vocabulary, config

    def cut(self, examples: list[ParserExample]) -> int:
        """How many of ``examples`` have a graph longer than the target length (training sees it cut)."""
        return sum(len(self.vocabulary.encode(SimpleGraph.from_json(e.graph), self.tokenizer.tokenize)) + 1 >
                   self.config.max_target_length for e in examples)

    def sources(self, sentences: list[str]) -> dict[str, torch.Tensor]:
        batch = self.tokenizer(sentences, padding=True, truncation=True, max_length=self.config.max_source_length,
                               return_tensors="pt")
        return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}

    def labels(self, graphs: list[SimpleGraph]) -> torch.Tensor:
        from ...modeling.amr_eval import EOS_ID

        rows = []
        for graph in graphs:
            ids = self.vocabulary.encode(graph, self.tokenizer.tokenize) + [EOS_ID]
            rows.append(ids[:self.config.max_target_length])
        width = max(len(r) for r in rows)
        return torch.tensor([r + [-100] * (width - len(r)) for r in rows], dtype=torch.long)

    def collate(self, examples: list[ParserExample]) -> dict[str, torch.Tensor]:
        return {**self.sources([e.sentence for e in examples]),
                "labels": self.labels([SimpleGraph.from_json(e.graph) for e in examples])}


def parse(model, batcher: ParserBatcher, sentences: list[str]) -> list[SimpleGraph]:
    """Greedy parses of ``sentences``, in order (:func:`~.parser.parse_sentences`)."""
    return parse_sentences(model, batcher.tokenizer, batcher.vocabulary, sentences, batch_size=PARSE_BATCH)


@torch.inference_mode()
def token_loss(model, batcher: ParserBatcher, examples: list[ParserExample]) -> float:
    """Mean token cross-entropy of ``examples`` (batches of :data:`PARSE_BATCH`, weighted by their tokens)."""
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    for start in range(0, len(examples), PARSE_BATCH):
        batch = {k: v.to(device) for k, v in batcher.collate(examples[start:start + PARSE_BATCH]).items()}
        n = int((batch["labels"] >= 0).sum())
        total += float(model(**batch).loss) * n
        tokens += n
    return total / max(1, tokens)


def run(opts: AmrParserTrainingOptions) -> dict:
    """Prepare (unless ``output_dir`` holds a prepared run) and train; returns a summary (also written to
    ``<output_dir>/summary.json``), or ``{"prepared": True, **manifest}`` with ``prepare_only``."""
    return run_recipe(opts, metric=METRIC, prepare=prepare, setup=device_first, train=train_prepared)


def train_prepared(run: RecipeRun[AmrParserTrainingOptions]) -> dict:
    """Train on the prepared graphs and report the best parser's Smatch and speed."""
    opts, out = run.opts, run.out
    sets = {split: load_records(out / examples_file(split), lambda row: ParserExample(**row)) for split in SPLITS}
    prepared = json.loads((out / VOCABULARY_FILE).read_text())

    tokenizer = base_tokenizer(opts.encoder)
    model = build_model(opts, prepared["special_tokens"], prepared["piece_ids"], tokenizer)
    batcher = ParserBatcher(tokenizer, ParserVocabulary.of_config(model.config, tokenizer), model.config)
    train_examples = sets["train"]
    batches_per_epoch, epoch_batches = recipe_batches(len(train_examples), opts)

    def collate(indices: np.ndarray) -> dict[str, torch.Tensor]:
        return batcher.collate([train_examples[i] for i in indices])

    def loss_fn(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return model(**on_model_device(model, batch)).loss

    def evaluate_fn(model) -> dict[str, float]:
        dev = sets["dev"]
        graphs = parse(model, batcher, [e.sentence for e in dev])
        smatch = graph_smatch(graphs, [SimpleGraph.from_json(e.graph) for e in dev])
        return {"val_smatch": float(smatch["f1"]), "val_loss": token_loss(model, batcher, dev)}

    from ...modeling.amr_eval import is_adapter_weight

    steps_per_epoch = batches_per_epoch // opts.gradient_accumulation
    args = run.arguments(steps_per_epoch=steps_per_epoch, weight_decay=0.01, warmup_ratio=0.1, max_grad_norm=1.0,
                         optimizer="adamw")
    result = train(model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=batches_per_epoch,
                   loss_fn=loss_fn, evaluate_fn=evaluate_fn,
                   save_best=functools.partial(replace_checkpoint, trainable_only=True, half=True),
                   selection_key="val_smatch", greater_is_better=True, resume=opts.resume, collate=collate,
                   learning_rate_of=learning_rate_groups(opts, is_head=lambda name: not name.startswith("encoder."),
                                                         is_adapter=is_adapter_weight))
    device = next(model.parameters()).device
    run.examples_seen(result, model)
    if not result.finished:
        return run.stopped(result)

    from ...modeling.amr_eval import AmrParserModel

    best = AmrParserModel.from_pretrained(out / "best", dtype=torch.float32).to(device)
    reports = {}
    for split in ("dev", "test"):
        began = time.perf_counter()
        graphs = parse(best, batcher, [e.sentence for e in sets[split]])
        seconds = time.perf_counter() - began
        reports[f"{split}_smatch"] = smatch_by_corpus([e.corpus for e in sets[split]], graphs,
                                                       [SimpleGraph.from_json(e.graph) for e in sets[split]])
        reports[f"{split}_sentences_per_second"] = round(len(graphs) / seconds, 1)
    return run.finish(result, "val_smatch", {
        "examples": {split: len(v) for split, v in sets.items()}, "corpora": list(opts.corpus_names),
        "output_tokens": model.config.output_size, "steps_per_epoch": steps_per_epoch, **reports,
        "cut_training_targets": batcher.cut(train_examples),
    }, encoder=encoder_record(opts.encoder))

"""DynaEval's training recipe: ``dialeval train dynaeval``.

Steps:
1. **Preparation** (needs the data directory and ``datasets``; ``--prepare-only`` stops after it): DailyDialog
   train / validation / test dialogues with 4-30 utterances (training: those of every ``--corpus``; ``chitchat``
   adds the two-speaker chats of the CCC corpus's train split, :mod:`dialeval.benchmarks.chitchat`, a chat of more
   than 30 turns as consecutive windows of 30, :func:`chitchat_split`), subsampled to
   ``max_dialogues`` / ``max_val_dialogues`` / ``max_test_dialogues`` (seeded), and up to ``perturbations`` UR / SS
   perturbations each, within each corpus (:mod:`~dialeval.metrics.dynaeval.data`), written as
   ``pairs_<split>.npz`` (texts once, pairs as text ids; 3.7 MB for the three splits at the defaults) with
   ``corpus_stats.json`` (per corpus and split), then the manifest ``prepared.json``
   (:mod:`dialeval.training.prepared`), last. The ``hr`` strategy needs every utterance's nearest neighbours by the
   encoder's cosine: with it, preparation also encodes the utterances (into the cache of step 2, which training then
   reuses). A run folder that has a manifest is trained from, on any machine:
   nothing reads the data directory or imports ``datasets`` again; a folder prepared with other values of
   :attr:`~.options.DynaEvalTrainingOptions.PREPARATION_FIELDS` is refused with one line naming them.
2. One embedding per unique utterance text with the frozen encoder (masked mean pooling) on the training device,
   cached in ``embeddings/`` (:class:`~dialeval.backbone.store.EmbeddingStore`): training runs only the small graph
   model. The embeddings are not part of the preparation: ~78k x 384 floats (120 MB) would not travel, and a GPU
   encodes them ~25 times faster than the CPU.
3. Margin ranking loss (margin 0.1) between the original's and the perturbation's scores, Adam (lr 0.002, L2 weight
   decay 1e-8), no gradient clipping, learning rate halved every epoch (``decay_every`` steps), seed 345678, as
   the original, but batches of 128 pairs for 2 epochs (the original: 512 pairs, 20 epochs) to fit a CPU budget;
   validation pairwise accuracy (original scored strictly above its perturbation) every ``eval_every`` steps and at
   the end; the checkpoint with the best validation accuracy is kept in ``best/``
   (``save_pretrained``: config + float16 safetensors + the custom-code files; the encoder is not part of the
   model; the config keeps float32, so the scorer computes in float32 from the stored values).
   Gathering a batch's utterance vectors is the batch building (:meth:`PairBatcher.collate`), so
   ``--dataloader-workers`` runs it beside training; ``--max-minutes`` stops with the state saved (exit 3) and the
   same command resumes.
4. The best checkpoint's pairwise accuracy on the test pairs, in ``summary.json`` (with the training device and the
   number of pairs seen), beside the accuracy of the untrained baseline on the same pairs: the mean cosine of
   adjacent utterances (``test_adjacent_cosine_*``). A perturbation that the baseline already spots is one the
   model need not learn anything to pass.

Defaults (every train dialogue, 20 perturbations: ~185k training pairs, ~78k unique utterances to encode) fit about
25 minutes on a 2-core CPU with one torch thread: ~5 min of encoding, ~9 min per epoch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...backbone import Encoder
from ...backbone.store import EmbeddingStore
from ...ranking import win_share
from ...training import recipe_batches, save_half_checkpoint, train, training_device
from ...training.prepared import write_manifest
from ...training.recipe import RecipeRun, run_recipe
from .data import (
    MAX_UTTERANCES,
    STRATEGIES,
    DialoguePair,
    PairSet,
    build_pairs,
    dialogue_windows,
    filter_dialogues,
    merge_pair_sets,
    nearest_texts,
    subsample,
    unique_texts,
)
from .options import DynaEvalTrainingOptions, dialogue_limit

METRIC = "dynaeval"
MARGIN = 0.1
SPLITS = ("train", "validation", "test")
EMBEDDINGS_DIR = "embeddings"
CORPUS_STATS_FILE = "corpus_stats.json"


def pairs_file(split: str) -> str:
    return f"pairs_{split}.npz"


def split_limits(opts: DynaEvalTrainingOptions) -> dict[str, int | None]:
    return {split: dialogue_limit(n) for split, n in
            (("train", opts.max_dialogues), ("validation", opts.max_val_dialogues), ("test", opts.max_test_dialogues))}


@dataclass
class CorpusSplit:
    """The dialogues of one corpus's split that DynaEval may train on, with what preparation records of them."""

    name: str  # the corpus (--corpus)
    dialogues: list[list[str]]  # the kept ones (4-30 utterances; for chitchat two speakers, long chats in windows)
    ids: list[str]
    stats: dict[str, int]
    source: Path  # the file read (for the manifest)


def dailydialog_split(split: str, data_dir: Path) -> CorpusSplit:
    from ...benchmarks import load_benchmark
    from ...benchmarks.dailydialog import DD_SPLITS

    ds = load_benchmark("dailydialog", split=split, data_dir=str(data_dir))
    dialogues, ids = list(ds["utterances"]), list(ds["dialogue_id"])
    kept = filter_dialogues(dialogues)
    return CorpusSplit("dailydialog", [dialogues[i] for i in kept], [ids[i] for i in kept],
                       {"dialogues": len(dialogues), "kept_4_to_30": len(kept)}, data_dir / DD_SPLITS[split])


def chitchat_split(split: str) -> CorpusSplit:
    """The chats of the CCC corpus's ``split`` (:mod:`dialeval.benchmarks.chitchat`) with two speakers: those of 4-30
    turns whole, longer ones as consecutive windows of 30 turns (:func:`~.data.dialogue_windows`; ids
    ``<chat id>/<first turn>``). A chat whose messages carry one sender id is one turn: the length rule leaves it
    out too."""
    from ...benchmarks.chitchat import SOURCE_FILE, chitchat_folder, load_chitchat

    ds = load_chitchat(split)
    dialogues, ids, speakers = list(ds["utterances"]), list(ds["dialogue_id"]), list(ds["speakers"])
    messages = list(ds["messages"])
    two = [i for i, s in enumerate(speakers) if max(s) == 1]
    spans = [(two[k], start, end) for k, start, end in dialogue_windows([len(dialogues[i]) for i in two])]
    whole = sum(end - start == len(dialogues[i]) for i, start, end in spans)
    return CorpusSplit(
        "chitchat", [dialogues[i][start:end] for i, start, end in spans],
        [ids[i] if end - start == len(dialogues[i]) else f"{ids[i]}/{start}" for i, start, end in spans],
        {"dialogues": len(dialogues), "two_speakers": len(two), "kept_4_to_30": whole,
         "longer_than_30": sum(len(dialogues[i]) > MAX_UTTERANCES for i in two), "windows": len(spans) - whole,
         "messages_kept": sum(sum(messages[i][start:end]) for i, start, end in spans)},
        chitchat_folder() / SOURCE_FILE)


def corpus_splits(opts: DynaEvalTrainingOptions, split: str, data_dir: Path) -> list[CorpusSplit]:
    """The corpora a split draws from: training from every ``--corpus``, validation and test from DailyDialog."""
    names = opts.corpus_list if split == "train" else ("dailydialog",)
    return [dailydialog_split(split, data_dir) if name == "dailydialog" else chitchat_split(split) for name in names]


def stats_key(corpus: str, split: str) -> str:
    """The key of a corpus's split in ``corpus_stats.json``: DailyDialog's by the split alone, as before chitchat."""
    return split if corpus == "dailydialog" else f"{corpus}_{split}"


def prepare(opts: DynaEvalTrainingOptions) -> dict:
    """Build the pairs of every split (training: from every ``--corpus``; validation and test: DailyDialog) and
    write them, the corpus statistics and (last) the manifest into the run folder; returns the manifest.

    The training dialogues of all corpora are subsampled together (``max_dialogues``); each corpus's dialogues are
    then perturbed among themselves: UR draws its replacements, and HR its neighbours, from the same corpus, since
    an utterance of another corpus would be told by its style alone (DailyDialog's edited prose beside chat typing).
    """
    from ...paths import resolve_data_dir

    out = Path(opts.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    data_dir = resolve_data_dir(opts.data_dir)
    files, data_files, stats = [CORPUS_STATS_FILE], [], {}
    store = None
    if "hr" in opts.strategy_list:  # the neighbours come from the encoder: its embeddings are cached for training
        encoder = Encoder(opts.encoder, device=training_device(opts.device), max_length=opts.max_utterance_tokens)
        store = EmbeddingStore(out / EMBEDDINGS_DIR, encoder, batch_size=opts.encode_batch_size)
    for split, limit in split_limits(opts).items():
        pairs = PairSet([], [])
        if limit != 0:
            corpora = corpus_splits(opts, split, data_dir)
            data_files += [c.source for c in corpora]
            owner = [k for k, c in enumerate(corpora) for _ in c.dialogues]
            picked = subsample(range(len(owner)), limit, seed=opts.seed, split=split)
            sets, at = [], 0
            for k, corpus in enumerate(corpora):
                chosen = [i - at for i in picked if owner[i] == k]
                at += len(corpus.dialogues)
                dialogues = [corpus.dialogues[i] for i in chosen]
                neighbours = None
                if store is not None:
                    texts = unique_texts(dialogues)
                    store.ensure(texts, desc=f"{split} utterance")
                    neighbours = nearest_texts(store.vectors(texts), opts.similar_top_k)
                # DailyDialog's draws are seeded by the split alone, as before other corpora
                stream = split if corpus.name == "dailydialog" else f"{corpus.name}/{split}"
                made = build_pairs(dialogues, [corpus.ids[i] for i in chosen], split=stream, seed=opts.seed,
                                   perturbations=opts.perturbations, strategies=opts.strategy_list,
                                   neighbours=neighbours)
                sets.append(made)
                stats[stats_key(corpus.name, split)] = {
                    **corpus.stats, "used": len(dialogues), "utterances": sum(len(d) for d in dialogues),
                    "unique_texts": len(made.texts), "pairs": len(made.pairs)}
            pairs = merge_pair_sets(sets)
        if split in ("train", "validation") and not pairs.pairs:
            raise ValueError(f"no {split} pairs: check the data directory ({data_dir}), --corpus and the dialogue "
                             "limits")
        pairs.save(out / pairs_file(split))
        files.append(pairs_file(split))
    (out / CORPUS_STATS_FILE).write_text(json.dumps(stats, indent=1))
    return write_manifest(out, metric=METRIC, options=opts, files=files, data_dir=data_dir, data_files=data_files)


class PairBatcher:
    """Turns pairs into model inputs: the originals then the perturbations, flattened utterance rows."""

    def __init__(self, pairs: PairSet, store: EmbeddingStore, vectors: torch.Tensor) -> None:
        self.rows = store.rows(pairs.texts)  # text id of this split -> row of the store
        self.vectors = vectors

    def collate(self, pairs: list[DialoguePair]) -> dict[str, torch.Tensor]:
        """The inputs of ``pairs`` as CPU tensors (gathering the utterance vectors is the costly part)."""
        dialogues = [p.original for p in pairs] + [p.perturbed for p in pairs]
        rows = torch.from_numpy(self.rows[np.fromiter((t for d in dialogues for t in d), dtype=np.int64)])
        return {"utterance_embeddings": self.vectors[rows],
                "dialogue_lengths": torch.tensor([len(d) for d in dialogues], dtype=torch.long)}

    @staticmethod
    def to_device(inputs: dict[str, torch.Tensor], device) -> dict[str, torch.Tensor]:
        """Collated inputs on the model's device (the lengths stay on the CPU, where the graph is built)."""
        return {**inputs, "utterance_embeddings": inputs["utterance_embeddings"].to(device)}

    def inputs(self, pairs: list[DialoguePair], device: torch.device) -> dict[str, torch.Tensor]:
        return self.to_device(self.collate(pairs), device)


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


def adjacent_cosine_accuracy(batcher: PairBatcher, pairs: list[DialoguePair]) -> dict[str, float]:
    """The mean cosine of adjacent utterances as the score: how often the original beats its perturbation (ties
    count one half), overall and per kind, in the keys of :func:`evaluate_pairs`."""
    if not pairs:
        return {}
    unit = torch.nn.functional.normalize(batcher.vectors.double(), dim=1)

    def coherence(dialogue: tuple[int, ...]) -> float:
        rows = unit[torch.from_numpy(batcher.rows[np.asarray(dialogue, dtype=np.int64)])]
        return float((rows[:-1] * rows[1:]).sum(dim=1).mean())

    original = np.array([coherence(p.original) for p in pairs])
    perturbed = np.array([coherence(p.perturbed) for p in pairs])
    win = win_share(original, perturbed)
    kinds = np.array([p.kind for p in pairs])
    return {"pair_accuracy": float(win.mean()),
            **{f"pair_accuracy_{k}": float(win[kinds == k].mean()) for k in STRATEGIES if (kinds == k).any()}}


def build_model(opts: DynaEvalTrainingOptions, encoder: Encoder):
    from dialeval.modeling.dynaeval import DynaEvalConfig, DynaEvalModel

    config = DynaEvalConfig(
        utterance_dim=encoder.hidden_size, utterance_encoder=encoder.name, utterance_encoder_sha256=encoder.sha256,
        max_utterance_tokens=encoder.max_length, window_past=opts.window_past, window_future=opts.window_future,
        dropout=opts.dropout,
    )
    torch.manual_seed(opts.seed)
    return DynaEvalModel(config)


def keep_lstm_weights_apart(device: torch.device | str) -> None:
    """On CUDA, turn cuDNN off for this training process. cuDNN packs the BiLSTM's weights into one buffer when the
    model moves to the GPU, and safetensors then refuses to save or load the training state (``last_state``), so a
    run could neither stop with ``--max-minutes`` nor resume a state saved on the CPU. PyTorch's own LSTM kernels
    keep the weights apart; the paper-budget run trained this way on an H200 at ~15 steps/s of 512 pairs."""
    if torch.device(device).type == "cuda" and torch.backends.cudnn.enabled:
        torch.backends.cudnn.enabled = False
        print("cuDNN is off for DynaEval training on CUDA (its packed LSTM weights cannot be saved as safetensors)")


def utterance_encoder(opts: DynaEvalTrainingOptions) -> Encoder:
    """The recipe's ``setup``: the frozen utterance encoder (``--encoder``) on the training device, made before
    preparation (:func:`~dialeval.training.recipe.run_recipe`)."""
    encoder = Encoder(opts.encoder, device=training_device(opts.device), max_length=opts.max_utterance_tokens)
    keep_lstm_weights_apart(encoder.device)
    return encoder


def run(opts: DynaEvalTrainingOptions) -> dict:
    """Prepare (unless ``output_dir`` holds a prepared run) and train DynaEval; returns a summary (also written to
    ``<output_dir>/summary.json``), or ``{"prepared": True, **manifest}`` with ``prepare_only``."""
    return run_recipe(opts, metric=METRIC, prepare=prepare, setup=utterance_encoder, train=train_prepared)


def train_prepared(run: RecipeRun[DynaEvalTrainingOptions]) -> dict:
    """Encode the prepared dialogues' utterances, train the graph model and report (the test pairs too)."""
    opts, out, encoder = run.opts, run.out, run.setup
    run.setup = None  # the model reads stored embeddings: the encoder goes once they are computed
    sets = {split: PairSet.load(out / pairs_file(split)) for split in SPLITS}
    corpus_stats = json.loads((out / CORPUS_STATS_FILE).read_text())
    texts = list(dict.fromkeys(t for s in sets.values() for t in s.texts))
    store = EmbeddingStore(out / EMBEDDINGS_DIR, encoder, batch_size=opts.encode_batch_size)
    embed_stats = store.ensure(texts, desc="utterance")
    vectors = torch.from_numpy(store.matrix)
    batchers = {split: PairBatcher(sets[split], store, vectors) for split in SPLITS}
    train_pairs, val_pairs = sets["train"].pairs, sets["validation"].pairs
    model = build_model(opts, encoder)
    encoder_record = encoder.record()
    del encoder
    batches_per_epoch, epoch_batches = recipe_batches(len(train_pairs), opts)
    steps_per_epoch = batches_per_epoch // opts.gradient_accumulation  # optimizer steps
    ranking = torch.nn.MarginRankingLoss(margin=MARGIN)

    def collate(indices: np.ndarray) -> dict[str, torch.Tensor]:
        return batchers["train"].collate([train_pairs[i] for i in indices])

    def loss_fn(model, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        score = model(**PairBatcher.to_device(inputs, next(model.parameters()).device)).score
        half = len(score) // 2  # the originals, then their perturbations
        s_orig, s_pert = score[:half], score[half:]
        return ranking(s_orig, s_pert, torch.ones_like(s_orig))

    def evaluate_fn(model) -> dict[str, float]:
        return {f"val_{k}": v for k, v in evaluate_pairs(model, batchers["validation"], val_pairs).items()}

    args = run.arguments(steps_per_epoch=steps_per_epoch, weight_decay=opts.weight_decay, warmup_ratio=0.0,
                         max_grad_norm=None, optimizer="adam", lr_schedule="step",
                         step_decay_every=opts.decay_every or steps_per_epoch, step_decay_gamma=opts.decay_gamma)
    result = train(
        model, args=args, options=opts, epoch_batches=epoch_batches, steps_per_epoch=batches_per_epoch,
        loss_fn=loss_fn, evaluate_fn=evaluate_fn, save_best=save_half_checkpoint, selection_key="val_pair_accuracy",
        greater_is_better=True, resume=opts.resume, collate=collate,
    )
    device = next(model.parameters()).device
    run.examples_seen(result, model, key="pairs_seen", unit="(original, perturbed) dialogue pairs")
    if not result.finished:
        return run.stopped(result)

    test = {}
    if sets["test"].pairs:
        from ...modeling.dynaeval import DynaEvalModel
        from ...scoring.learned import load_pretrained

        best = load_pretrained(DynaEvalModel, out / "best", dtype=torch.float32).to(device)
        test = {f"test_{k}": v for k, v in evaluate_pairs(best, batchers["test"], sets["test"].pairs).items()}
        test.update({f"test_adjacent_cosine_{k}": v
                     for k, v in adjacent_cosine_accuracy(batchers["test"], sets["test"].pairs).items()})
    return run.finish(result, "val_pair_accuracy", {
        "pairs": {split: len(sets[split].pairs) for split in SPLITS},
        "pairs_by_kind": {split: {k: sum(p.kind == k for p in sets[split].pairs) for k in STRATEGIES}
                          for split in SPLITS},
        "corpus": corpus_stats, "unique_texts": len(texts), "embeddings": embed_stats,
        "steps_per_epoch": steps_per_epoch, **test,
    }, encoder=encoder_record)

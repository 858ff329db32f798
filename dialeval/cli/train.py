"""``dialeval train <metric>``: one command per learned metric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

train_app = typer.Typer(no_args_is_help=True, help="Train a learned metric (real training is a command, not a test).")

# Options every training command shares, declared once.
OutputDirOption = Annotated[Path, typer.Option(help="Run folder (resumable; best checkpoint in <output-dir>/best).")]
DataDirOption = Annotated[Optional[Path], typer.Option(help="Data directory.")]
MaxStepsOption = Annotated[Optional[int], typer.Option(help="Stop after N steps.")]
DeviceOption = Annotated[Optional[str], typer.Option(help="cpu, cuda... (default: Accelerate picks).")]
ResumeOption = Annotated[bool, typer.Option(help="Continue an interrupted run in output-dir.")]
# BERT-RUBER and PONE read the same DailyDialog pairs through the same embedding store.
RuberPairsOption = Annotated[int, typer.Option(help="Training (context, response) pairs from DailyDialog (0: all).")]
RuberValPairsOption = Annotated[int, typer.Option(help="Validation pairs (each also gets one random negative).")]
ContextTurnsOption = Annotated[int, typer.Option(help="Context turns read before the response.")]
SelectionOption = Annotated[str, typer.Option(help="Checkpoint selection: val_accuracy (higher) or val_loss (lower).")]
EmbeddingDirOption = Annotated[Optional[Path], typer.Option(help=(
    "Embedding store folder (default: <output-dir>/embeddings); runs, concurrent ones too, may share one."))]
ThreadsOption = Annotated[Optional[int], typer.Option(help="torch CPU threads (1 is fastest on a busy machine).")]


@train_app.command("grade")
def train_grade(
    output_dir: OutputDirOption,
    data_dir: DataDirOption = None,
    max_positives: Annotated[int, typer.Option(help="Training positives sampled from DailyDialog (2 pairs each).")] = 12_000,
    max_val_positives: Annotated[int, typer.Option(help="Validation positives.")] = 500,
    epochs: Annotated[int, typer.Option()] = 1,
    batch_size: Annotated[int, typer.Option()] = 16,
    learning_rate: Annotated[float, typer.Option(help="Encoder learning rate.")] = 2e-5,
    head_learning_rate: Annotated[float, typer.Option(help="Learning rate of the graph and fusion modules.")] = 1e-4,
    trainable_encoder_layers: Annotated[int, typer.Option(help="Top encoder layers fine-tuned.")] = 2,
    max_seq_length: Annotated[int, typer.Option()] = 128,
    eval_every: Annotated[int, typer.Option(help="Validate every N steps.")] = 250,
    max_steps: MaxStepsOption = None,
    seed: Annotated[int, typer.Option()] = 71,
    graph: Annotated[bool, typer.Option(help="Graph branch (off: ablation 'no graph').")] = True,
    khop: Annotated[bool, typer.Option(help="k-hop neighbour features (off: ablation).")] = True,
    hop_attention: Annotated[bool, typer.Option(help="1/hop attention scaling (off: ablation).")] = True,
    device: DeviceOption = None,
    resume: ResumeOption = True,
) -> None:
    """Train GRADE on DailyDialog (lexical + embedding negatives, margin ranking loss)."""
    from ..metrics.grade.train import GradeTrainingOptions, run

    summary = run(GradeTrainingOptions(
        output_dir=str(output_dir), data_dir=str(data_dir) if data_dir else None, max_positives=max_positives,
        max_val_positives=max_val_positives, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
        head_learning_rate=head_learning_rate, trainable_encoder_layers=trainable_encoder_layers,
        max_seq_length=max_seq_length, eval_every=eval_every, max_steps=max_steps, seed=seed, use_graph=graph,
        use_khop=khop, use_hop_attention=hop_attention, device=device, resume=resume,
    ))
    typer.echo(f"best validation ranking loss {summary['best_val_ranking_loss']:.4f} at step {summary['best_step']} "
               f"of {summary['steps']}; checkpoint: {output_dir / 'best'}")


@train_app.command("dynaeval")
def train_dynaeval(
    output_dir: OutputDirOption,
    data_dir: DataDirOption = None,
    max_dialogues: Annotated[int, typer.Option(help="Training dialogues sampled from DailyDialog train (0: all).")] = 0,
    max_val_dialogues: Annotated[int, typer.Option(help="Validation dialogues (0: all).")] = 500,
    max_test_dialogues: Annotated[int, typer.Option(help="Test dialogues for the final report (-1: none, 0: all).")] = 500,
    perturbations: Annotated[int, typer.Option(help="Perturbed copies per dialogue (half UR, half SS).")] = 20,
    epochs: Annotated[int, typer.Option()] = 2,
    batch_size: Annotated[int, typer.Option(help="Pairs (original, perturbation) per step.")] = 128,
    lr: Annotated[float, typer.Option("--lr", help="Adam learning rate.")] = 0.002,
    weight_decay: Annotated[float, typer.Option(help="Adam L2 weight decay.")] = 1e-8,
    decay_every: Annotated[Optional[int], typer.Option(help="Steps between learning-rate halvings (default: one epoch).")] = None,
    eval_every: Annotated[Optional[int], typer.Option(help="Validate every N steps (default: once per epoch).")] = None,
    max_steps: MaxStepsOption = None,
    window: Annotated[int, typer.Option(help="Graph context window, past and future (-1: whole dialogue).")] = 4,
    seed: Annotated[int, typer.Option()] = 345678,
    threads: Annotated[int, typer.Option(help="torch CPU threads (0: torch's default; 1 is fastest on a busy machine).")] = 1,
    device: DeviceOption = None,
    resume: ResumeOption = True,
) -> None:
    """Train DynaEval on DailyDialog (utterance replacement + speaker-level shuffling, margin ranking loss)."""
    from ..metrics.dynaeval.train import DynaEvalTrainingOptions, run

    def limit(n: int) -> int | None:
        return None if n == 0 else (0 if n < 0 else n)

    summary = run(DynaEvalTrainingOptions(
        output_dir=str(output_dir), data_dir=str(data_dir) if data_dir else None,
        max_dialogues=limit(max_dialogues), max_val_dialogues=limit(max_val_dialogues),
        max_test_dialogues=limit(max_test_dialogues), perturbations=perturbations, epochs=epochs,
        batch_size=batch_size, learning_rate=lr, weight_decay=weight_decay, decay_every=decay_every,
        eval_every=eval_every, max_steps=max_steps, window_past=window, window_future=window, seed=seed,
        num_threads=threads, device=device, resume=resume,
    ))
    test = f"; test pair accuracy {summary['test_pair_accuracy']:.4f}" if "test_pair_accuracy" in summary else ""
    typer.echo(f"best validation pair accuracy {summary['best_val_pair_accuracy']:.4f} at step {summary['best_step']} "
               f"of {summary['steps']}{test}; checkpoint: {output_dir / 'best'}")


@train_app.command("bert-ruber")
def train_bert_ruber(
    output_dir: OutputDirOption,
    data_dir: DataDirOption = None,
    max_positives: RuberPairsOption = 30_000,
    max_val_positives: RuberValPairsOption = 1_000,
    context_turns: ContextTurnsOption = 2,
    epochs: Annotated[int, typer.Option()] = 20,
    batch_size: Annotated[int, typer.Option(help="Positives per step (plus one negative each).")] = 256,
    lr: Annotated[float, typer.Option("--lr", help="Adam learning rate (constant).")] = 1e-3,
    weight_decay: Annotated[float, typer.Option(help="Adam L2 weight decay.")] = 1e-4,
    selection: SelectionOption = "val_accuracy",
    max_steps: MaxStepsOption = None,
    embedding_dir: EmbeddingDirOption = None,
    seed: Annotated[int, typer.Option()] = 11,
    threads: ThreadsOption = None,
    device: DeviceOption = None,
    resume: ResumeOption = True,
) -> None:
    """Train BERT-RUBER's unreferenced head on DailyDialog (random negatives, binary cross-entropy)."""
    from ..metrics.bert_ruber.train import BertRuberTrainingOptions, run

    summary = run(BertRuberTrainingOptions(
        output_dir=str(output_dir), data_dir=str(data_dir) if data_dir else None,
        max_positives=max_positives or None, max_val_positives=max_val_positives, context_turns=context_turns,
        epochs=epochs, batch_size=batch_size, learning_rate=lr, weight_decay=weight_decay, selection=selection,
        max_steps=max_steps, embedding_dir=str(embedding_dir) if embedding_dir else None, seed=seed,
        num_threads=threads, device=device, resume=resume,
    ))
    typer.echo(f"best {selection} {summary[f'best_{selection}']:.4f} at step {summary['best_step']} of "
               f"{summary['steps']} ({summary['total_seconds']:.0f} s); checkpoint: {output_dir / 'best'}")


@train_app.command("pone")
def train_pone(
    output_dir: OutputDirOption,
    data_dir: DataDirOption = None,
    max_positives: RuberPairsOption = 30_000,
    max_val_positives: RuberValPairsOption = 1_000,
    context_turns: ContextTurnsOption = 2,
    augment: Annotated[bool, typer.Option(help="Augmented positives, Po (PONE-Po-LF: --no-augment --no-label-filter).")] = True,
    label_filter: Annotated[bool, typer.Option(help="Label filter, LF, in a second stage (PONE-Ne-LF: --no-label-filter --no-weighted-negatives).")] = True,
    weighted_negatives: Annotated[bool, typer.Option(help="Weighted negative sampling, Ne (PONE-Ne: --no-weighted-negatives).")] = True,
    augmenter: Annotated[str, typer.Option(help="eda, or generate (needs --generator).")] = "eda",
    generator: Annotated[Optional[str], typer.Option(help="Seq2seq or causal LM folder / Hub id for --augmenter generate.")] = None,
    k: Annotated[int, typer.Option("--k", help="Augmented responses per training pair.")] = 2,
    synonym_threshold: Annotated[float, typer.Option(help="EDA: min GloVe cosine of a synonym.")] = 0.8,
    eda_alpha: Annotated[float, typer.Option(help="EDA: share of words edited per operation.")] = 0.1,
    candidates: Annotated[int, typer.Option("--h", help="Weighted sampling: random candidates per positive (h).")] = 200,
    temperature: Annotated[float, typer.Option("--t", help="Weighted sampling: softmax temperature (t).")] = 0.05,
    uniform_every: Annotated[int, typer.Option(help="Every N-th epoch uses uniform negatives (0: never).")] = 2,
    epochs: Annotated[int, typer.Option(help="Epochs of stage 1 (or of the only stage without the filter).")] = 10,
    stage2_epochs: Annotated[int, typer.Option(help="Epochs of stage 2 (label filter).")] = 10,
    batch_size: Annotated[int, typer.Option(help="Positives per step.")] = 256,
    lr: Annotated[float, typer.Option("--lr", help="Adam learning rate of stage 1 (constant).")] = 1e-3,
    stage2_lr: Annotated[float, typer.Option(help="Adam learning rate of stage 2.")] = 1e-4,
    weight_decay: Annotated[float, typer.Option(help="Adam L2 weight decay of stage 1 (stage 2: 0).")] = 1e-4,
    fuzzy_threshold: Annotated[float, typer.Option(help="Label filter: keep scores <= f or >= 1-f.")] = 0.05,
    fuzzy_process: Annotated[str, typer.Option(help="Label filter: drop fuzzy pairs, or change them to positives.")] = "drop",
    relabel_every: Annotated[int, typer.Option(help="Label filter: epochs between relabelling rounds.")] = 2,
    max_filter_rounds: Annotated[int, typer.Option(help="Label filter: at most N rounds.")] = 5,
    selection: SelectionOption = "val_accuracy",
    max_steps: Annotated[Optional[int], typer.Option(help="Stop each stage after N steps.")] = None,
    embedding_dir: EmbeddingDirOption = None,
    seed: Annotated[int, typer.Option()] = 11,
    threads: ThreadsOption = None,
    device: DeviceOption = None,
    resume: ResumeOption = True,
) -> None:
    """Train PONE on DailyDialog: augmented positives, weighted negatives, label filter (flags for the ablations)."""
    from ..metrics.pone.train import PoneTrainingOptions, run

    summary = run(PoneTrainingOptions(
        output_dir=str(output_dir), data_dir=str(data_dir) if data_dir else None,
        max_positives=max_positives or None, max_val_positives=max_val_positives, context_turns=context_turns,
        augment=augment, label_filter=label_filter, weighted_negatives=weighted_negatives, augmenter=augmenter,
        generator=generator, k=k, synonym_threshold=synonym_threshold, eda_alpha=eda_alpha, candidates=candidates,
        temperature=temperature, uniform_every=uniform_every, epochs=epochs, stage2_epochs=stage2_epochs,
        batch_size=batch_size, learning_rate=lr, stage2_learning_rate=stage2_lr, weight_decay=weight_decay,
        fuzzy_threshold=fuzzy_threshold, fuzzy_process=fuzzy_process, relabel_every=relabel_every,
        max_filter_rounds=max_filter_rounds, selection=selection, max_steps=max_steps,
        embedding_dir=str(embedding_dir) if embedding_dir else None, seed=seed, num_threads=threads, device=device,
        resume=resume,
    ))
    typer.echo(f"{summary['variant']}: best {selection} {summary[f'best_{selection}']:.4f} at step "
               f"{summary['best_step']} ({summary['total_seconds']:.0f} s); checkpoint: {output_dir / 'best'}")

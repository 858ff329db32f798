"""``dialeval train <metric>``: one command per learned metric, each generated from its recipe's options dataclass
(:func:`dialeval.training.options.typer_command`): the flags, defaults and help are the dataclass's."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer

from ..metrics.amr_eval.options import AmrEvalTrainingOptions, AmrParserTrainingOptions
from ..metrics.bert_ruber.options import BertRuberTrainingOptions
from ..metrics.dynaeval.options import DynaEvalTrainingOptions
from ..metrics.grade.options import GradeTrainingOptions
from ..metrics.pone.options import PoneTrainingOptions
from ..metrics.rade.options import RadeTrainingOptions
from ..training.options import TrainingOptions, typer_command

train_app = typer.Typer(no_args_is_help=True, help="Train a learned metric (real training is a command, not a test).")


@dataclass(frozen=True)
class Recipe:
    options: type[TrainingOptions]
    module: str  # holds ``run(opts) -> summary`` (imported when the command runs: it pulls in torch, datasets...)
    summary_line: Callable[[Any, dict], str]

    def run(self, opts: TrainingOptions) -> dict:
        return importlib.import_module(self.module).run(opts)


def _checkpoint(opts) -> str:
    return f"checkpoint: {opts.output_dir}/best"


def _grade_line(opts: GradeTrainingOptions, s: dict) -> str:
    return (f"best {opts.select_by} {s[f'best_{opts.select_by}']:.4f} at step {s['best_step']} of "
            f"{s['steps']}; {_checkpoint(opts)}")


def _dynaeval_line(opts: DynaEvalTrainingOptions, s: dict) -> str:
    test = (f"; test pair accuracy {s['test_pair_accuracy']:.4f} (adjacent cosine, untrained: "
            f"{s['test_adjacent_cosine_pair_accuracy']:.4f})" if "test_pair_accuracy" in s else "")
    return (f"best validation pair accuracy {s['best_val_pair_accuracy']:.4f} at step {s['best_step']} of "
            f"{s['steps']}{test}; {_checkpoint(opts)}")


def _bert_ruber_line(opts: BertRuberTrainingOptions, s: dict) -> str:
    return (f"best {opts.selection} {s[f'best_{opts.selection}']:.4f} at step {s['best_step']} of {s['steps']} "
            f"({s['total_seconds']:.0f} s); {_checkpoint(opts)}")


def _pone_line(opts: PoneTrainingOptions, s: dict) -> str:
    return (f"{s['variant']}: best {opts.selection} {s[f'best_{opts.selection}']:.4f} at step {s['best_step']} "
            f"({s['total_seconds']:.0f} s); {_checkpoint(opts)}")


def _rade_line(opts: RadeTrainingOptions, s: dict) -> str:
    test = s.get("test_correlations", {})
    tested = "".join(f"; test {name} Pearson {v['pearson']:.3f} / Spearman {v['spearman']:.3f}"
                     for name, v in test.items() if name != "all")
    return (f"stage {opts.stage}: best val_correlation {s['best_val_correlation']:.4f} at step {s['best_step']} of "
            f"{s['steps']}{tested}; {_checkpoint(opts)} (for scoring: {s['scoring_checkpoint']})")


def _amr_eval_line(opts: AmrEvalTrainingOptions, s: dict) -> str:
    test = "".join(f"; test positive vs {kind}: accuracy {v['accuracy']:.3f}, AUC {v['auc']:.3f}"
                   for kind, v in s["test_discrimination"].items())
    return (f"amr-eval ({s['graph_source']}): best val_accuracy {s['best_val_accuracy']:.4f} at step "
            f"{s['best_step']} of {s['steps']}{test}; {_checkpoint(opts)}")


def _amr_parser_line(opts: AmrParserTrainingOptions, s: dict) -> str:
    test = "".join(f"; test Smatch {name} {v['f1']:.3f}" for name, v in s["test_smatch"].items())
    return (f"amr-parser: best val_smatch {s['best_val_smatch']:.4f} at step {s['best_step']} of {s['steps']}{test} "
            f"({s['test_sentences_per_second']} sentences/s); {_checkpoint(opts)}")


RECIPES: dict[str, Recipe] = {
    "grade": Recipe(GradeTrainingOptions, "dialeval.metrics.grade.train", _grade_line),
    "dynaeval": Recipe(DynaEvalTrainingOptions, "dialeval.metrics.dynaeval.train", _dynaeval_line),
    "bert-ruber": Recipe(BertRuberTrainingOptions, "dialeval.metrics.bert_ruber.train", _bert_ruber_line),
    "pone": Recipe(PoneTrainingOptions, "dialeval.metrics.pone.train", _pone_line),
    "rade": Recipe(RadeTrainingOptions, "dialeval.metrics.rade.train", _rade_line),
    "amr-eval": Recipe(AmrEvalTrainingOptions, "dialeval.metrics.amr_eval.train", _amr_eval_line),
    "amr-parser": Recipe(AmrParserTrainingOptions, "dialeval.metrics.amr_eval.parser_train", _amr_parser_line),
}


#: The exit status of a run that ``--max-minutes`` stopped before its last step (state saved; rerun to resume).
STOPPED_EXIT_CODE = 3


def _handler(recipe: Recipe) -> Callable[[TrainingOptions], None]:
    def handle(opts: TrainingOptions) -> None:
        summary = recipe.run(opts)
        if opts.prepare_only:
            typer.echo(f"prepared {opts.output_dir} ({len(summary['files'])} files, manifest prepared.json); train "
                       "with the same command without --prepare-only, here or on another machine")
        elif summary.get("finished") is False:
            typer.echo(f"stopped at step {summary['steps']} of {summary['total_steps']} (--max-minutes); the state "
                       f"is saved in {opts.output_dir}: run the same command again to resume", err=True)
            raise typer.Exit(STOPPED_EXIT_CODE)
        else:
            typer.echo(recipe.summary_line(opts, summary))

    return handle


for _name, _recipe in RECIPES.items():
    train_app.command(_name)(typer_command(_recipe.options, _handler(_recipe),
                                           help=(_recipe.options.__doc__ or "").strip()))

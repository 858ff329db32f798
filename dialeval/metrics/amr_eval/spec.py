"""The AMR-enhanced evaluator's declaration: scorer, training commands (its small model and its AMR parser), export,
Space and card (:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, PaperBudget, RecipeSpec, SpaceSpec, best_checkpoint


def summary_line(opts: Any, s: dict) -> str:
    test = "".join(f"; test positive vs {kind}: accuracy {v['accuracy']:.3f}, AUC {v['auc']:.3f}"
                   for kind, v in s["test_discrimination"].items())
    return (f"amr-eval ({s['graph_source']}): best val_accuracy {s['best_val_accuracy']:.4f} at step "
            f"{s['best_step']} of {s['steps']}{test}; {best_checkpoint(opts)}")


def parser_summary_line(opts: Any, s: dict) -> str:
    test = "".join(f"; test Smatch {name} {v['f1']:.3f}" for name, v in s["test_smatch"].items())
    return (f"amr-parser: best val_smatch {s['best_val_smatch']:.4f} at step {s['best_step']} of {s['steps']}{test} "
            f"({s['test_sentences_per_second']} sentences/s); {best_checkpoint(opts)}")


SPECS = (
    MetricSpec(
        name="amr_eval",
        scorer="dialeval.metrics.amr_eval.scorer:AmrEvalScorer",
        aliases=("amr-eval",),
        recipes=(
            RecipeSpec("amr-eval", "dialeval.metrics.amr_eval.options:AmrEvalTrainingOptions",
                       "dialeval.metrics.amr_eval.train", "dialeval.metrics.amr_eval.spec:summary_line",
                       budgets=(PaperBudget(None, None, 50, "examples",
                                            "the original code's fixed loop of 50 epochs (the paper states none, and "
                                            "its 9,259 DailyDialog++ training contexts are not here: 50 epochs of the "
                                            "run's examples)"),)),
            RecipeSpec("amr-parser", "dialeval.metrics.amr_eval.options:AmrParserTrainingOptions",
                       "dialeval.metrics.amr_eval.parser_train", "dialeval.metrics.amr_eval.spec:parser_summary_line"),
        ),
        export=ExportSpec("dialeval.modeling.amr_eval:AmrEvalModel", tokenizer_config_field="base_encoder"),
        space=SpaceSpec(
            title="AMR-enhanced evaluator: response appropriateness (dialeval)",
            score_label="SLM probability (appropriate)",
            description="The small model of the AMR-enhanced evaluator: the probability that the response is an "
                        "appropriate reply, from the text and the graphs of the context and the response (spaCy "
                        "dependency graphs standing in for AMR). The LLM judge is not run here. Runs offline on CPU."),
        evaluate_module=True,
        card_benchmarks=("dailydialog_pp", "fed_turn", "grade_eval", "sanity_turn", "usr_personachat",
                         "usr_topicalchat"),
    ),
)

"""BERT-RUBER's declarations, the hybrid metric and its unreferenced half: scorers, training command, export, Space
and card (:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, PaperBudget, RecipeSpec, SpaceSpec, best_checkpoint

#: DailyDialog's training split: 69,264 distinct (up to two turns, response) pairs (BERT-RUBER's and PONE's,
#: :func:`dialeval.metrics.bert_ruber.data.dialogue_pairs` at ``context_turns`` 2).
DAILYDIALOG_TRAIN_PAIRS = 69_264


def summary_line(opts: Any, s: dict) -> str:
    return (f"best {opts.selection} {s[f'best_{opts.selection}']:.4f} at step {s['best_step']} of {s['steps']} "
            f"({s['total_seconds']:.0f} s); {best_checkpoint(opts)}")


SPECS = (
    MetricSpec(
        name="bert_ruber",
        scorer="dialeval.metrics.bert_ruber.scorer:BertRuberScorer",
        aliases=("bert-ruber",),
        recipes=(RecipeSpec("bert-ruber", "dialeval.metrics.bert_ruber.options:BertRuberTrainingOptions",
                            "dialeval.metrics.bert_ruber.train", "dialeval.metrics.bert_ruber.spec:summary_line",
                            budgets=(PaperBudget(None, DAILYDIALOG_TRAIN_PAIRS, None, "positives",
                                                 "every DailyDialog training pair, each epoch (for the run's "
                                                 "epochs)"),)),),
        export=ExportSpec("dialeval.modeling.bert_ruber:BertRuberModel"),
        space=SpaceSpec(
            title="BERT-RUBER: referenced + unreferenced response score (dialeval)",
            score_label="BERT-RUBER hybrid (min)", fields=("context", "response", "reference"),
            details={"unreferenced": "unreferenced_scores", "referenced cosine": "referenced_scores"},
            description="The hybrid of the unreferenced score and the reference cosine, each normalised with ranges "
                        "fixed at training time, so an item's score does not depend on other items. Runs offline on "
                        "CPU."),
        evaluate_module=True,
        # its card reports the hybrid where references exist; bert_ruber_unref covers the sets without them
        card_benchmarks=("grade_eval", "usr_personachat", "usr_topicalchat"),
    ),
    MetricSpec(
        name="bert_ruber_unref",
        scorer="dialeval.metrics.bert_ruber.scorer:BertRuberUnrefScorer",
        aliases=("bert-ruber-unref",),
    ),
)

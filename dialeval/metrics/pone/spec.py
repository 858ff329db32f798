"""PONE's declaration: scorer, training command, export, Space and card (:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, PaperBudget, RecipeSpec, SpaceSpec, best_checkpoint


def summary_line(opts: Any, s: dict) -> str:
    return (f"{s['variant']}: best {opts.selection} {s[f'best_{opts.selection}']:.4f} at step {s['best_step']} "
            f"({s['total_seconds']:.0f} s); {best_checkpoint(opts)}")


def transformers_usage(model_id: str, config: Mapping[str, Any], context: Sequence[str], response: str) -> str:
    """The model card's code that scores ``context`` / ``response`` with the exported PONE head and transformers
    alone, as ``load_scorer("pone")`` does: the last ``context_turns`` turns joined with a space (cut from the left)
    and the response, mean-pooled by the encoder the checkpoint names, then the head in float64."""
    from ...scoring.export import MODEL_LINE, sentence_embedding_code

    return "\n".join([
        "import torch",
        "from transformers import AutoModel, AutoTokenizer",
        "",
        MODEL_LINE.format(model_id=model_id),
        "model = AutoModel.from_pretrained(MODEL, trust_remote_code=True, dtype=torch.float64).eval()  # as dialeval",
        sentence_embedding_code(config.get("encoder")) + "\n",
        f"context = {json.dumps(list(context))}",
        f"response = {json.dumps(response)}",
        "cfg = model.config  # the head reads the last cfg.context_turns turns, joined with a space",
        'context_embeds = embed([" ".join(context[-cfg.context_turns:])], cfg.encoder_max_length, side="left")',
        "response_embeds = embed([response], cfg.encoder_max_length)",
        "with torch.inference_mode():",
        "    score = model(context_embeds=context_embeds.double(), response_embeds=response_embeds.double()).score",
        "print(float(score[0]))  # in (0, 1): how well the response fits the context",
    ])


SPECS = (
    MetricSpec(
        name="pone",
        scorer="dialeval.metrics.pone.scorer:PoneScorer",
        recipes=(RecipeSpec("pone", "dialeval.metrics.pone.options:PoneTrainingOptions",
                            "dialeval.metrics.pone.train", "dialeval.metrics.pone.spec:summary_line",
                            budgets=(PaperBudget(None, None, None, "positives (real or augmented)",
                                                 "every DailyDialog training pair with its augmentations (the run's "
                                                 "epochs; --max-positives 0)", all_data_option="max_positives"),)),),
        export=ExportSpec("dialeval.modeling.bert_ruber:PoneModel",
                          transformers_usage="dialeval.metrics.pone.spec:transformers_usage"),
        space=SpaceSpec(
            title="PONE: unreferenced response score (dialeval)", score_label="PONE score",
            description="How appropriate a response is to its context, in (0, 1), without a reference. Runs offline on "
                        "CPU."),
        evaluate_module=True,
        card_benchmarks=("dailydialog_pp", "fed_turn", "grade_eval", "sanity_dialogue", "sanity_turn",
                         "usr_personachat", "usr_topicalchat"),
    ),
)

"""DynaEval's declaration: scorer, training command, export, Space and card
(:class:`~dialeval.scoring.spec.MetricSpec`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...scoring.spec import ExportSpec, MetricSpec, PaperBudget, RecipeSpec, SpaceSpec, best_checkpoint


def summary_line(opts: Any, s: dict) -> str:
    test = (f"; test pair accuracy {s['test_pair_accuracy']:.4f} (adjacent cosine, untrained: "
            f"{s['test_adjacent_cosine_pair_accuracy']:.4f})" if "test_pair_accuracy" in s else "")
    return (f"best validation pair accuracy {s['best_val_pair_accuracy']:.4f} at step {s['best_step']} of "
            f"{s['steps']}{test}; {best_checkpoint(opts)}")


def transformers_usage(model_id: str, config: Mapping[str, Any], context: Sequence[str], response: str) -> str:
    """The model card's code that scores the dialogue ``context`` + ``response`` with the exported DynaEval model
    and transformers alone, as ``load_scorer("dynaeval")`` does (its turn-level score, and ``score_dialogues`` of
    that dialogue): each turn mean-pooled by the encoder the checkpoint names, cut to ``max_utterance_tokens``,
    speakers alternating."""
    from ...scoring.export import MODEL_LINE, sentence_embedding_code

    return "\n".join([
        "import torch",
        "from transformers import AutoModel, AutoTokenizer",
        "",
        MODEL_LINE.format(model_id=model_id),
        "model = AutoModel.from_pretrained(MODEL, trust_remote_code=True).eval()",
        sentence_embedding_code(config.get("utterance_encoder")) + "\n",
        f"dialogue = {json.dumps([*context, response])}",
        "utterances = embed(dialogue, model.config.max_utterance_tokens)  # one vector per turn",
        "with torch.inference_mode():  # speakers alternate 0, 1, 0, ... (else pass speaker_ids, one per turn)",
        "    score = model(utterance_embeddings=utterances, dialogue_lengths=torch.tensor([len(dialogue)])).score",
        "print(float(score[0]))  # unbounded, higher is more coherent",
    ])


SPECS = (
    MetricSpec(
        name="dynaeval",
        scorer="dialeval.metrics.dynaeval.scorer:DynaEvalScorer",
        recipes=(RecipeSpec("dynaeval", "dialeval.metrics.dynaeval.options:DynaEvalTrainingOptions",
                            "dialeval.metrics.dynaeval.train", "dialeval.metrics.dynaeval.spec:summary_line",
                            budgets=(PaperBudget(None, None, 20, "(original, perturbed) dialogue pairs",
                                                 "20 epochs (the paper's corpora are not here: 20 epochs of the "
                                                 "run's pairs)"),)),),
        export=ExportSpec("dialeval.modeling.dynaeval:DynaEvalModel",
                          transformers_usage="dialeval.metrics.dynaeval.spec:transformers_usage"),
        space=SpaceSpec(
            title="DynaEval: dialogue-level coherence (dialeval)", score_label="DynaEval score",
            fields=("dialogue",),
            description="Coherence of a whole conversation from a speaker-aware utterance graph; unbounded, higher is "
                        "better. Runs offline on CPU."),
        evaluate_module=True,
        card_benchmarks=("fed_dialogue", "fed_turn", "sanity_dialogue", "sanity_turn"),
    ),
)

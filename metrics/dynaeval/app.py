"""A Hugging Face Space for DynaEval: paste a dialogue, get its coherence score."""

import gradio as gr

import dialeval

scorer = dialeval.load_scorer("dynaeval")


def score(dialogue: str) -> str:
    turns = [t.strip() for t in dialogue.split("\n") if t.strip()]
    if len(turns) < 2:
        return "Enter at least two turns, one per line."
    out = scorer.score_dialogues(dialogues=[turns])
    return f"DynaEval score: {out.scores[0]:.4f}\n\n{out.signature}"


demo = gr.Interface(
    fn=score,
    inputs=gr.Textbox(lines=10, label="Dialogue (one turn per line; two speakers alternating, first speaker first)"),
    outputs=gr.Textbox(label="Score"),
    title="DynaEval: dialogue-level coherence (dialeval)",
    description="Coherence of a whole conversation from a speaker-aware utterance graph; unbounded, higher is "
                "better. Runs offline on CPU.",
)

if __name__ == "__main__":
    demo.launch()

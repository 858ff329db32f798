"""A Hugging Face Space for PONE: type a context and a response, get the score."""

import gradio as gr

import dialeval

scorer = dialeval.load_scorer("pone")


def score(context: str, response: str) -> str:
    turns = [t.strip() for t in context.split("\n") if t.strip()]
    if not turns or not response.strip():
        return "Enter at least one context turn and a response."
    out = scorer.score(contexts=[turns], responses=[response])
    return f"PONE score: {out.scores[0]:.4f}\n\n{out.signature}"


demo = gr.Interface(
    fn=score,
    inputs=[gr.Textbox(lines=4, label="Context (one turn per line; the last two are read)"),
            gr.Textbox(lines=2, label="Response")],
    outputs=gr.Textbox(label="Score"),
    title="PONE: unreferenced response score (dialeval)",
    description="How appropriate a response is to its context, in (0, 1), without a reference. Runs offline on CPU.",
)

if __name__ == "__main__":
    demo.launch()

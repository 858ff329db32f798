"""A Hugging Face Space for BERT-RUBER: context, response and reference in, the three scores out.

One item at a time, so the hybrid uses normalization="fixed" (each item on its own); min-max normalisation, the
original's default, needs a set of items (use the evaluate module or `dialeval score`).
"""

import gradio as gr

import dialeval

hybrid = dialeval.load_scorer("bert_ruber", normalization="fixed")
unreferenced = dialeval.load_scorer("bert_ruber_unref")


def score(context: str, response: str, reference: str) -> str:
    turns = [t.strip() for t in context.split("\n") if t.strip()]
    if not turns or not response.strip() or not reference.strip():
        return "Enter at least one context turn, a response and a reference."
    out = hybrid.score(contexts=[turns], responses=[response], references=[reference])
    meta = out.metadata
    return (f"BERT-RUBER hybrid (min, fixed normalisation): {out.scores[0]:.4f}\n"
            f"unreferenced: {meta['unreferenced_scores'][0]:.4f}   "
            f"referenced cosine: {meta['referenced_scores'][0]:.4f}\n\n{out.signature}")


demo = gr.Interface(
    fn=score,
    inputs=[gr.Textbox(lines=4, label="Context (one turn per line; the last two are read)"),
            gr.Textbox(lines=2, label="Response"), gr.Textbox(lines=2, label="Reference response")],
    outputs=gr.Textbox(label="Scores"),
    title="BERT-RUBER: referenced + unreferenced response score (dialeval)",
    description="Runs offline on CPU.",
)

if __name__ == "__main__":
    demo.launch()

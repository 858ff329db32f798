"""A Hugging Face Space for BERT-RUBER: context, response and reference in, the hybrid and its two parts out.

One item at a time: the hybrid's default normalisation uses ranges fixed when the checkpoint was trained, so an
item's score does not depend on other items.
"""

from dialeval.interfaces.space import Space

demo = Space(
    "bert_ruber", title="BERT-RUBER: referenced + unreferenced response score (dialeval)",
    score_label="BERT-RUBER hybrid (min)", fields=("context", "response", "reference"),
    details={"unreferenced": "unreferenced_scores", "referenced cosine": "referenced_scores"},
    description="Runs offline on CPU.",
).build()

if __name__ == "__main__":
    demo.launch()

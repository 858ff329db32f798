"""A Hugging Face Space for PONE: type a context and a response, get the score."""

from dialeval.interfaces.space import Space

demo = Space(
    "pone", title="PONE: unreferenced response score (dialeval)", score_label="PONE score",
    description="How appropriate a response is to its context, in (0, 1), without a reference. Runs offline on CPU.",
).build()

if __name__ == "__main__":
    demo.launch()

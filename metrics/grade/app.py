"""A Hugging Face Space for GRADE: type a context and a response, get the coherence score."""

from dialeval.interfaces.space import Space

demo = Space(
    "grade", title="GRADE: graph-enhanced coherence metric (dialeval)", score_label="GRADE score",
    description="Coherence of a response with its context, in (0, 1); the last two context turns are read. "
                "Runs offline on CPU.",
).build()

if __name__ == "__main__":
    demo.launch()

"""A Hugging Face Space for DynaEval: paste a dialogue, get its coherence score."""

from dialeval.interfaces.space import Space

demo = Space(
    "dynaeval", title="DynaEval: dialogue-level coherence (dialeval)", score_label="DynaEval score",
    fields=("dialogue",),
    description="Coherence of a whole conversation from a speaker-aware utterance graph; unbounded, higher is "
                "better. Runs offline on CPU.",
).build()

if __name__ == "__main__":
    demo.launch()

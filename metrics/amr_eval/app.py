"""A Hugging Face Space for the AMR-enhanced evaluator's small model: type a context and a response, get its score.

The Space is declared once, in the metric's spec (``dialeval/metrics/<m>/spec.py``); an exported Space has
``examples.json`` beside this file.
"""

from pathlib import Path

from dialeval.interfaces.space import EXAMPLES_FILE, SPACES

demo = SPACES["amr_eval"].build(Path(__file__).with_name(EXAMPLES_FILE))

if __name__ == "__main__":
    demo.launch()

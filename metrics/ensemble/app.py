"""A Hugging Face Space for the ensemble: type a context and a response, get the combined score and each member's
calibrated score.

The Space is declared once, in the metric's spec (``dialeval/metrics/<m>/spec.py``); an exported Space has
``examples.json`` beside this file.
"""

from pathlib import Path

from dialeval.interfaces.space import EXAMPLES_FILE, SPACES

demo = SPACES["ensemble"].build(Path(__file__).with_name(EXAMPLES_FILE))

if __name__ == "__main__":
    demo.launch()

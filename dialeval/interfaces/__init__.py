"""Front doors other than the command line: the `evaluate` modules and the Hugging Face Spaces of the metrics.

Each lives as a short file under ``metrics/<m>/`` (``<m>.py``, ``app.py``) that names its metric and card text; the
code they share is written once here, in the installed package (``evaluate`` copies only the module file itself).
:mod:`.evaluate_cache` registers the installed modules with ``evaluate`` so that ``evaluate.load("dialeval/<m>")``
works by name, offline.
"""

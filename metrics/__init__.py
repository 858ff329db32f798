"""The `evaluate` modules, one folder per metric (``metrics/<m>/<m>.py`` with its card, Space app and requirements).

Installed as ``dialeval.evaluate_modules`` so that ``dialeval evaluate-modules`` can register them with `evaluate`
under ``dialeval/<m>``; nothing imports these folders as Python packages.
"""

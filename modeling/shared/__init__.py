"""The one source of the model code that several custom-code folders share (``modeling_shared.py``,
``configuration_shared.py``).

The library imports the shared helpers that belong to no one metric from here (``dialeval.modeling.shared``: the
int8 rows of ``dialeval checkpoint quantise``, GRADE's node table and the half-precision save); the custom-code
folders import their own byte-identical copies (``from .modeling_shared import ...``), which travel beside a
checkpoint. Edit these files only, then write the copies with ``dialeval.scoring.export.refresh_shared_model_code()``.
"""

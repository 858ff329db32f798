"""Learned dialogue-evaluation models (GRADE, ...): data preparation and model code, one subpackage per model."""

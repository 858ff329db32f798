"""The one training loop (Accelerate) that every metric's recipe runs."""

from .loop import TrainingArguments, TrainingResult, train

__all__ = ["TrainingArguments", "TrainingResult", "train"]

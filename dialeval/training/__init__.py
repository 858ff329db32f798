"""Training: the one loop (Accelerate) every metric's recipe runs, its device and threads, and the options
dataclasses every recipe's options inherit (from which the CLI command and the saved config come)."""

from .device import (
    DeviceUnavailable,
    device_description,
    training_device,
)
from .loop import (
    TrainingArguments,
    TrainingResult,
    half_state_dict,
    on_model_device,
    recipe_batches,
    replace_checkpoint,
    save_half_checkpoint,
    shared_loop_arguments,
    shuffled_batches,
    stopped_summary,
    train,
)
from .options import EncoderOptions, RecipeOptions, TrainingOptions, TrainingOptionsError, option, typer_command

__all__ = ["DeviceUnavailable", "EncoderOptions", "RecipeOptions", "TrainingArguments", "TrainingOptions",
           "TrainingOptionsError", "TrainingResult", "device_description", "half_state_dict", "on_model_device",
           "option", "recipe_batches", "replace_checkpoint", "save_half_checkpoint", "shared_loop_arguments",
           "shuffled_batches", "stopped_summary", "train", "training_device", "typer_command"]

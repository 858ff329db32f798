"""What every metric stands on: the encoder (one resolver, one loaded-model class with batch-invariant forward
passes), length-sorted batching with the input order restored, device resolution, progress bars, and the on-disk
embedding store used by training."""

from .batching import length_sorted_batches, progress
from .device import DeviceUnavailable, check_device_available, resolve_device
from .encoder import (
    DEFAULT_ENCODER,
    DEFAULT_ENCODER_PACKAGE,
    Encoder,
    EncoderMismatchError,
    check_encoder,
    default_encoder_path,
    encoder_name,
    resolve_encoder_path,
    weights_fingerprint,
    weights_sha256,
)

__all__ = ["DEFAULT_ENCODER", "DEFAULT_ENCODER_PACKAGE", "DeviceUnavailable", "Encoder", "EncoderMismatchError",
           "check_device_available", "check_encoder", "default_encoder_path", "encoder_name", "length_sorted_batches",
           "progress", "resolve_device", "resolve_encoder_path", "weights_fingerprint", "weights_sha256"]

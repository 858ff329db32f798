"""The ``dialeval`` command line."""

from .app import app, main

__all__ = ["app", "main"]

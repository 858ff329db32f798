"""Releasing to the Hugging Face Hub: cards rendered from measured results, and the folders a release pushes."""

"""Saving and resuming: verl's checkpoint layout (``checkpoint``), checkpoints as tracked artifacts
(``artifacts``) and the Hugging Face export of a trained actor (``export``)."""

"""The checkpoint room: saving and resuming in verl's checkpoint layout (``checkpoint``), checkpoints registered
as versioned artifacts (``artifacts``) and a checkpoint's policy written as a Hugging Face model folder
(``export``)."""

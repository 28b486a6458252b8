"""Runnable examples: `python -m toolwire.examples.<name>` (they need the `openai` package)."""

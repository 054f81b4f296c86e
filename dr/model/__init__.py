"""The model: the nouns every other layer speaks in. Imports nothing from dr above it."""

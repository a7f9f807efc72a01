"""automil built-in plugin: datasets (being written)."""

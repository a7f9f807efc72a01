"""automil built-in plugin: pdmisvm (being written)."""

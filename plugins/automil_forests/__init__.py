"""automil built-in plugin: forests (being written)."""

"""automil built-in plugin: svm (being written)."""

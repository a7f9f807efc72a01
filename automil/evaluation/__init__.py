"""Scoring: the standardized protocol, the folds and their file, prediction, instance metrics."""

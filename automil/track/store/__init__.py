"""The MLflow store and its conventions: names, values, locations."""

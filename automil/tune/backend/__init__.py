"""The Optuna adapters: storage and the trial records kept on it."""

"""The fit workers: isolated killable processes and the fit they run."""

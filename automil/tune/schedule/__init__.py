"""The time policy: every deadline, reserve and the cost probe's sizes."""

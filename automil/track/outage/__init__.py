"""Tracking through a store outage: the tolerant wrapper and the backlog it replays."""

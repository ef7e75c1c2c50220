"""Hostile inputs and cluster faults, one table per class (issue 16); see SECURITY.md."""

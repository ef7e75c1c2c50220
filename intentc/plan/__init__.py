"""Placement of intents onto a topology: fair share, SLA order, topology-aware GPU choice."""

"""Observation: recordings of every request, what a request touched, wire answers made comparable."""

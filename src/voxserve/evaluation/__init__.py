"""Evaluation helpers: speech recognition and error rates for intelligibility checks."""

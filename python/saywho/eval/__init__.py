"""Scoring against references: word error rate and diarization error rate."""

"""Snapshots: a subscription's table read by token range, resumable per range, before its log."""

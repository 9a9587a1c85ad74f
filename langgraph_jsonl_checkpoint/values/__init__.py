"""LangGraph values to readable JSON and back: cells, list deltas, snapshots, caches.
"""

"""Bytes, files and locks: the thread log, its index and sidecar, the store directory.

Nothing here knows LangGraph: records are JSON objects, values are opaque cells.
"""

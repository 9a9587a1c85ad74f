"""Tool calls that survive a crash: the lifecycle model, the decisions, the journals, the adapter.
"""

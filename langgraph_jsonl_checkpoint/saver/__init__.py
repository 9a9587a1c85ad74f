"""LangGraph's checkpointer API: ``JsonlSaver`` and what it runs on.
"""

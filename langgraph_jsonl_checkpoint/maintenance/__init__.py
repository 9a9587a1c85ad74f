"""Work on whole logs: verify, repair, compact, prune, copy, delete runs.
"""

"""The test suite of langgraph_jsonl_checkpoint (run ``python -m pytest`` from the repository root).

``tests.harness`` holds the kits the test files share (and that ``stress/`` reuses).
"""

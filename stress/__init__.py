"""The full crash batteries; run each from the repository root as ``python -m stress.<name>``."""

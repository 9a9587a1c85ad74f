"""The package's version, the one place it is written: ``pyproject.toml`` reads it
(setuptools' dynamic ``version``, read as text without importing the package) and
``langgraph_jsonl_checkpoint.__version__`` re-exports it."""

__version__ = "0.2.0"

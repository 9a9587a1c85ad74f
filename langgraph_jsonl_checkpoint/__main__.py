"""``python -m langgraph_jsonl_checkpoint``: the ``langgraph-jsonl`` command."""

import sys

from .cli import main

sys.exit(main())

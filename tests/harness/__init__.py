"""Kits shared by the test files and the ``stress/`` scripts. Nothing here is a test.

Test files import the names they use from the module that holds them
(``from tests.harness.checkpoints import config, cp_id``); the repository root is on
``sys.path`` under pytest and when a stress script runs as ``python -m stress.<name>``.

Checkpoints, answers and raw files:

- ``checkpoints``: hand-made checkpoints and configs; ``Mirror`` (a saver and an
  ``InMemorySaver`` fed the same calls).
- ``answers``: what a saver serves, as comparable data; ``InMemorySaver`` models of
  copy_thread, prune and delete_for_runs.
- ``reference_log``: a log built through the real saver with what each call acknowledged.
- ``raw_log``: thread files, committed batches, record spans, quarantine entries,
  sidecar summaries and blocks, ``write_in_place``, stray temp files.
- ``scratch``: scratch directories on tmpfs.

Reference graphs:

- ``flow_graphs``: the tool-calling agent loop, interrupts, fan-out and ``Send``,
  nested subgraphs, a node that fails once.
- ``state_graphs``: a counter, ``DeltaChannel``, a long chat with message edits, nodes
  mutating state in place, custom types.

Crash batteries (``tests/test_crash_*.py``, ``stress/``):

- ``scripted_agent``: a deterministic tool-calling agent, ``AckingSaver`` and its ack files.
- ``children``: the forkserver context, ``spawn``, ``kill_at`` and the children's entry
  points (the fork server preloads this module and ``truncation``).
- ``rounds``: one kill -9 round, one multi-process round.
- ``truncation``: every-byte truncation of the reference log, in forked children.
- ``powerloss_fs`` (the durability model), ``powerloss_shim`` (the ``os`` proxy),
  ``powerloss_checks`` (what a crash image may serve, checking one),
  ``powerloss_rounds`` (workloads under the shim, the battery).
- ``bounded``: reads under a time limit.

Differential tests (``tests/test_differential_*.py``):

- ``differential``: the saver under test and the driver; ``differential_ops``: scenario
  operations; ``differential_normalise``: normalisation and comparison.

Replay adapter tests (``tests/test_replay_*.py``):

- ``replay_tools``: tools counting their effects, the scripted model, graphs, checks.
- ``replay_crashes``: crash injection, child specs, the fork server, crash and resume.
"""

"""Mutation testing of the package, module by module, with mutmut 3.

Run it from the repository root, in the project's virtualenv with the ``mutation`` extra
(``pip install -e '.[test,mutation]'``)::

    python -m stress.mutation                          # the storage and replay core
    python -m stress.mutation --module disk/framing    # one module (repeatable)
    python -m stress.mutation --module disk/framing --max-mutants 30
    python -m stress.mutation --survivors             # the last survivors, against new tests
    python -m stress.mutation --report-only --report stress/results/mutation-<commit>.md

For each module it makes a scratch copy of the project under ``.mutation/<module>/``,
whose ``pyproject.toml`` tells mutmut to mutate that one module and to run the test files
that ``MODULES`` lists for it (mutmut then narrows each mutant to the tests that called
the mutated function). It runs ``mutmut run`` there (niced), reads mutmut's verdicts and
writes ``stress/results/mutation-<commit>.md``: per module the mutants generated, killed,
survived, timed out and the time taken, then every survivor with its diff and its verdict
from ``stress/mutation_verdicts.py`` (an equivalent mutant and why, or "missing test" until
one is written).

Why mutmut and not cosmic-ray: mutmut 3 forks each mutant's test run from a process that
has already imported LangGraph and collected the tests, and runs only the tests that
reached the mutated function; cosmic-ray starts a fresh ``pytest`` per mutant (seconds of
imports each) and needs a session database per module. On a 2-core machine that is the
difference between minutes and hours per module.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from stress.mutation_verdicts import VERDICTS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "langgraph_jsonl_checkpoint"
SCRATCH = ROOT / ".mutation"
RESULTS = ROOT / "stress" / "results"

#: Each module of the storage and replay core, with the test files that cover it: fast
#: files that exercise the module directly (the slow batteries are left out; mutmut runs
#: only the tests among these that reach the mutated function).
#: Tests that fail in the clean run mutmut makes in one process, in its order, though they
#: pass in the suite: left out of every run (pytest ``--deselect``).
DESELECTED = (
    # Another test's live run on a thread named "t" is still registered in the process.
    "tests/test_retention.py::test_a_run_waits_out_a_sweep_instead_of_being_refused",
    # These count the saver worker threads alive, and other tests' savers may still be closing.
    "tests/test_async_writes.py::test_worker_threads_end_on_close_and_serve_several_event_loops",
    "tests/test_async_writes.py::test_async_exit_ends_the_worker_threads",
    "tests/test_async_writes.py::test_idle_worker_threads_end_by_themselves",
    "tests/test_async_writes.py::test_a_forked_child_gets_worker_threads_of_its_own",
)

MODULES: dict[str, tuple[str, ...]] = {
    "disk/framing": ("test_format", "test_sync_units", "test_crash_tails", "test_crash_bitflips",
                     "test_mutation_regressions"),
    "disk/log": ("test_format", "test_log_lifecycle", "test_crash_tails", "test_crash_io_faults",
                 "test_crash_midlog", "test_retention", "test_async_writes", "test_mutation_regressions"),
    "disk/index": ("test_format", "test_index_sources", "test_saver", "test_crash_index",
                   "test_mutation_regressions"),
    "disk/sidecar": ("test_sidecar", "test_sidecar_checks", "test_index_sources", "test_crash_index"),
    "disk/sidecar_checks": ("test_sidecar_checks", "test_sidecar", "test_crash_index"),
    "disk/generations": ("test_log_lifecycle", "test_delete_runs", "test_retention", "test_crash_io_faults",
                         "test_mutation_regressions", "test_saver"),
    "disk/store": ("test_store_dir", "test_repair_result", "test_saver", "test_retention",
                   "test_crash_security", "test_crash_midlog", "test_mutation_regressions"),
    "values/reader": ("test_format", "test_delta_errors", "test_witness", "test_saver",
                      "test_differential_channels"),
    "values/records": ("test_format", "test_record_building", "test_index_sources", "test_witness",
                       "test_saver", "test_differential_channels"),
    "values/codec": ("test_format", "test_encode_errors", "test_differential_serde", "test_record_building",
                     "test_saver"),
    "values/witness": ("test_witness",),
    "maintenance/compaction": ("test_saver", "test_delete_runs", "test_retention",
                               "test_mutation_regressions", "test_crash_retention"),
    "maintenance/repair": ("test_repair_result", "test_crash_midlog", "test_crash_bitflips",
                           "test_cli_errors"),
    "maintenance/verify": ("test_verify_report", "test_crash_midlog", "test_crash_bitflips",
                           "test_cli_errors"),
    "replay/calls": ("test_replay_calls", "test_replay_behaviour", "test_replay_pending"),
    "replay/journal": ("test_journal_checkpointers", "test_replay_behaviour", "test_replay_durability",
                       "test_replay_pending"),
    "replay/adapter": ("test_replay_behaviour", "test_replay_durability", "test_replay_pending",
                       "test_replay_batches"),
    "replay/asking": ("test_replay_behaviour", "test_replay_durability", "test_replay_pending"),
    "saver/runs": ("test_saver", "test_busy_threads"),
    "saver/tool_log": ("test_tool_journal", "test_replay_behaviour", "test_replay_durability",
                       "test_replay_crash"),
}

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout",
          -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}


@dataclass
class ModuleResult:
    """One module's mutation run: counts, time and the survivors' diffs."""

    module: str
    tests: tuple[str, ...]
    statuses: dict[str, str] = field(default_factory=dict)
    diffs: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    error: str = ""
    source: str = ""
    generated: int = 0
    sampled: int | None = None

    def count(self, status: str) -> int:
        return sum(1 for s in self.statuses.values() if s == status)


def _pyproject(module: str, tests: tuple[str, ...]) -> str:
    base = (ROOT / "pyproject.toml").read_text()
    selection = ", ".join(f'"tests/{t}.py"' for t in tests)
    return base + (
        "\n[tool.mutmut]\n"
        f'source_paths = ["{PACKAGE}"]\n'
        f'only_mutate = ["{PACKAGE}/{module}.py"]\n'
        f"pytest_add_cli_args_test_selection = [{selection}]\n"
        'also_copy = ["stress/", "examples/", "docs/", "README.md"]\n'
        f"pytest_add_cli_args = {json.dumps([a for t in DESELECTED for a in ('--deselect', t)])}\n"
        "use_git_change_detection = false\n"
        # A mutant whose tests take 4x the clean run's CPU time is stuck: a timeout, which
        # counts as killed (mutmut's default of 15x spends most of a run on such mutants).
        "timeout_multiplier = 4.0\n"
    )


def _prepare(module: str, tests: tuple[str, ...], *, where: Path | None = None) -> Path:
    """A fresh scratch copy of the project for one module's run (or in ``where``)."""
    work = where or _scratch(module)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")
    for name in (PACKAGE, "tests", "stress", "examples", "docs"):
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, work / name, ignore=ignore)
    shutil.copy(ROOT / "README.md", work / "README.md")
    (work / "pyproject.toml").write_text(_pyproject(module, tests))
    return work


def _mutmut(work: Path, *args: str) -> int:
    exe = Path(sys.executable).with_name("mutmut")
    with open(work / "mutmut-run.log", "a") as log:
        return subprocess.run(["nice", str(exe), *args], cwd=work, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}).returncode


def _show(work: Path, name: str) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    shown = subprocess.run([str(exe), "show", name], cwd=work, capture_output=True, text=True)
    return _trim_diff(shown.stdout)


def _generate_only(work: Path) -> list[str]:
    """Generate the mutants without running them; their names, in source order."""
    code = (
        "import mutmut.__main__ as m\n"
        "from mutmut.mutation.trampoline import set_mutant_under_test\n"
        "set_mutant_under_test('mutant_generation')\n"
        "m.makedirs('mutants', exist_ok=True)\n"
        "m.copy_src_dir(); m.copy_also_copy_files(); m.setup_source_paths(); m.create_mutants(1)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=work, check=True, capture_output=True)
    return list(_meta(work))


def _meta(work: Path) -> dict[str, int | None]:
    codes: dict[str, int | None] = {}
    for meta in (work / "mutants").rglob("*.py.meta"):
        codes.update(json.loads(meta.read_text()).get("exit_code_by_key", {}))
    return codes


def _spread(names: list[str], k: int) -> list[str]:
    """``k`` of the names, evenly spaced over the module (a fixed sample, not random)."""
    if k >= len(names):
        return names
    return [names[(i * len(names)) // k] for i in range(k)]


def _scratch(module: str) -> Path:
    return SCRATCH / module.replace("/", ".")


def run_module(module: str, max_mutants: int | None, children: int) -> None:
    """Mutate one module and run its tests against each mutant (a fresh scratch copy)."""
    work = _prepare(module, MODULES[module])
    start = time.monotonic()
    chosen: list[str] = []
    if max_mutants is not None:
        chosen = _spread(_generate_only(work), max_mutants)
    code = _mutmut(work, "run", "--max-children", str(children), *chosen)
    codes = _meta(work)
    run = {"seconds": time.monotonic() - start, "chosen": chosen, "exit": code, "max_mutants": max_mutants,
           "source": _source_commit(),
           "codes": {n: codes.get(n) for n in (chosen or codes)}}
    (work / "run.json").write_text(json.dumps(run))


def rerun_survivors(module: str, children: int) -> None:
    """Run a module's survivors (and any mutant of the run not checked) again, against the
    current tests and test table.

    A changed test selection makes mutmut forget every verdict; the mutants killed before
    are killed still (their killing test is still among the tests), so their verdicts,
    kept in ``run.json``, are put back after the run.
    """
    work = _scratch(module)
    run = json.loads((work / "run.json").read_text())
    before: dict[str, int | None] = run.get("codes") or _meta(work)
    shutil.rmtree(work / "tests")
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    (work / "pyproject.toml").write_text(_pyproject(module, MODULES[module]))
    chosen = run["chosen"] or list(before)
    again = [n for n in chosen if STATUS.get(before.get(n), "suspicious") in _AGAIN]
    if not again:
        return
    start = time.monotonic()
    run["exit"] = _mutmut(work, "run", "--max-children", str(children), *again)
    run["rerun_seconds"] = run.get("rerun_seconds", 0.0) + time.monotonic() - start
    codes = _meta(work)
    for name in chosen:
        if codes.get(name) is None and name not in again:
            codes[name] = before.get(name)
    run["codes"] = {n: codes.get(n) for n in chosen}
    (work / "run.json").write_text(json.dumps(run))


_SPINNER = tuple("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
_AGAIN = ("survived", "no tests", "suspicious", "not checked")


def load_result(module: str) -> ModuleResult:
    """A module's results, read back from its scratch copy."""
    work = _scratch(module)
    run = json.loads((work / "run.json").read_text())
    result = ModuleResult(module, MODULES[module], seconds=run["seconds"] + run.get("rerun_seconds", 0.0))
    result.sampled = run.get("max_mutants")
    result.source = run.get("source", "")
    result.generated = len(_meta(work))
    chosen = set(run["chosen"])
    codes = run.get("codes") or {k: v for k, v in _meta(work).items() if not chosen or k in chosen}
    result.statuses = {k: STATUS.get(v, "suspicious") for k, v in codes.items()}
    if run["exit"] != 0 and all(s == "not checked" for s in result.statuses.values()):
        log = (work / "mutmut-run.log").read_text().splitlines()
        result.error = "\n".join(ln for ln in log if not ln.lstrip().startswith(_SPINNER))[-3000:]
    for name, status in result.statuses.items():
        if status in ("survived", "no tests", "suspicious"):
            result.diffs[name] = _show(work, name)
    return result


def _trim_diff(text: str) -> str:
    changed = (ln for ln in text.splitlines() if ln.startswith(("-", "+")))
    return "\n".join(ln for ln in changed if not ln.startswith(("---", "+++")))


def verdict(name: str, diff: str) -> str:
    """The verdict on one survivor: the recorded one if its line still matches."""
    if name not in VERDICTS:
        return "**missing test** (no verdict recorded)"
    line, reason = VERDICTS[name]
    if line.strip() not in diff:
        return f"**stale verdict** (the mutated line moved; was: {reason})"
    return reason


def _source_commit() -> str:
    """The last commit that changed the package's source (what a run mutates)."""
    out = subprocess.run(["git", "log", "-1", "--format=%h", "--", PACKAGE], cwd=ROOT, capture_output=True,
                         text=True)
    return out.stdout.strip()


def _commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _is_survivor(status: str) -> bool:
    return status in ("survived", "no tests", "suspicious")


def write_report(results: list[ModuleResult], commit: str, command: str, path: Path,
                 not_run: dict[str, int] | None = None) -> None:
    """Write the markdown report of the modules' runs (``not_run``: modules of the table
    without a run, with their mutant counts)."""
    out = [f"# Mutation testing at {commit}", "",
           f"Command: `{command}` (mutmut 3, niced, on the shared 2-core machine). Each module ran"
           " on a scratch copy of the package source at commit"
           f" {', '.join(sorted({r.source for r in results if r.source})) or '(not recorded)'};"
           f" survivors were run again (`--survivors`) against the tests of {commit}. Time: the"
           " module's run plus its reruns.", "",
           "| module | generated | run | killed | timed out | survived | of which equivalent | score "
           "| time |",
           "|---|---|---|---|---|---|---|---|---|"]
    total_killed = total_real = 0
    for r in results:
        survivors = [n for n, s in r.statuses.items() if _is_survivor(s)]
        equivalent = sum(1 for n in survivors if not verdict(n, r.diffs[n]).startswith("**"))
        killed = r.count("killed") + r.count("timeout")
        real = killed + len(survivors) - equivalent
        total_killed, total_real = total_killed + killed, total_real + real
        score = f"{100 * killed / real:.1f}%" if real else "-"
        run = f"{len(r.statuses)}" + (" (sample)" if len(r.statuses) < r.generated else "")
        out.append(f"| {r.module} | {r.generated} | {run} | {r.count('killed')} | {r.count('timeout')} | "
                   f"{len(survivors)} | {equivalent} | {score} | {r.seconds / 60:.1f} min |")
    if total_real:
        out.append(f"| **all** | | | | | | | **{100 * total_killed / total_real:.1f}%** | |")
    per_mutant = sum(r.seconds for r in results) / max(1, sum(len(r.statuses) for r in results))
    sampled = [r for r in results if len(r.statuses) < r.generated]
    if sampled:
        left = sum(r.generated - len(r.statuses) for r in sampled)
        out += ["", f"Not run: the other {left} mutants of the sampled modules; about"
                f" {left * per_mutant / 3600:.0f} h more at this run's pace ({per_mutant:.0f} s a mutant, two"
                " at a time, on a machine shared with other work)."]
    if not_run:
        out += ["", "Not run (no time left in this session), with the time a full run would take at"
                f" this run's pace ({per_mutant:.0f} s a mutant):", ""]
        out += [f"- `{m}`: {n} mutants, about {n * per_mutant / 3600:.1f} h (a 30-mutant sample:"
                f" {30 * per_mutant / 60:.0f} min)" for m, n in not_run.items()]
    out += ["",
            "Score: mutants killed (a timeout counts: the mutant made a test hang or loop) over the mutants"
            " run that are not equivalent. \"(sample)\": `--max-mutants` ran that many mutants evenly"
            " spaced over the module. A survivor is a mutant no listed test failed on (\"no tests\": none"
            " of them reached the mutated function).", "",
            "Tests per module (`tests/<name>.py`):", ""]
    out += [f"- `{r.module}`: {', '.join(r.tests)}" for r in results]
    out.append("")
    for r in results:
        if r.error:
            out += [f"## {r.module}: mutmut failed", "", "```", r.error, "```", ""]
        survivors = sorted((n for n, s in r.statuses.items() if _is_survivor(s)), key=_mutant_order)
        if not survivors:
            continue
        out += [f"## {r.module}: survivors", ""]
        for name in survivors:
            out += [f"- `{name.rsplit('.', 1)[-1]}` ({r.statuses[name]}): {verdict(name, r.diffs[name])}",
                    "", "  ```diff"]
            out += ["  " + ln for ln in r.diffs[name].splitlines()] + ["  ```", ""]
    path.write_text("\n".join(out) + "\n")


def _count_mutants(module: str) -> int:
    """How many mutants mutmut makes of a module (generated in a scratch copy, not run)."""
    work = _prepare(module, MODULES[module], where=SCRATCH / "count")
    try:
        return len(_generate_only(work))
    finally:
        shutil.rmtree(work)


def _mutant_order(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition("__mutmut_")
    return head, int(number) if number.isdigit() else 0


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run each module (or its survivors again), write the report."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="a module to mutate (repeatable; default: every module of MODULES)")
    parser.add_argument("--max-mutants", type=int, default=None,
                        help="run at most K mutants per module, evenly spaced over it (default: all)")
    parser.add_argument("--children", type=int, default=2, help="mutants run at once (default: 2)")
    parser.add_argument("--survivors", action="store_true",
                        help="run only the last run's survivors again, against the current tests")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: write the report from the last runs in .mutation/")
    parser.add_argument("--report", default=None, help="the report's path (default: "
                        "stress/results/mutation-<commit>.md)")
    args = parser.parse_args(argv)
    commit = _commit()
    path = Path(args.report) if args.report else RESULTS / f"mutation-{commit}.md"
    modules = args.module or list(MODULES)
    for module in modules:
        if args.report_only:
            continue
        print(f"{module}: {'survivors again' if args.survivors else 'mutating'}, tests "
              f"{', '.join(MODULES[module])}", flush=True)
        if args.survivors:
            rerun_survivors(module, args.children)
        else:
            run_module(module, args.max_mutants, args.children)
    results = [load_result(m) for m in modules if (_scratch(m) / "run.json").exists()]
    not_run = {m: _count_mutants(m) for m in modules if not (_scratch(m) / "run.json").exists()}
    for r in results:
        print(f"{r.module}: {len(r.statuses)} of {r.generated} mutants run, {r.count('killed')} killed, "
              f"{r.count('timeout')} timed out, {sum(1 for s in r.statuses.values() if _is_survivor(s))} "
              f"survived, {r.seconds:.0f} s" + (" (mutmut failed)" if r.error else ""), flush=True)
    command = "python -m stress.mutation " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.report_only:
        samples = sorted({r.sampled for r in results if r.sampled})
        runs = f"--max-mutants {samples[0]}" if len(samples) == 1 else "(see run.json)"
        command = (f"python -m stress.mutation {runs}`, then `--survivors` after each batch of new"
                   f" tests; this report: `{command.strip()}")
    write_report(results, commit, command.strip(), path, not_run)
    print(f"report: {path}")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Mutation testing of the package, module by module, with mutmut 3.

Run it from the repository root, in the project's virtualenv with the ``mutation`` extra
(``pip install -e '.[test,mutation]'``)::

    python -m stress.mutation                          # the storage and replay core
    python -m stress.mutation --module disk/framing    # one module (repeatable)
    python -m stress.mutation --module disk/framing --max-mutants 40

For each module it makes a scratch copy of the project under ``.mutation/<module>/``,
whose ``pyproject.toml`` tells mutmut to mutate that one module and to run the test files
that ``MODULES`` lists for it (mutmut then narrows each mutant to the tests that called
the mutated function). It runs ``mutmut run`` there (niced), reads mutmut's verdicts and
writes ``stress/results/mutation-<commit>.md``: per module the mutants generated, killed,
survived, timed out and the time taken, then every survivor with its diff and its verdict
from ``VERDICTS`` (an equivalent mutant and why, or "missing test" until one is written).

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

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "langgraph_jsonl_checkpoint"
SCRATCH = ROOT / ".mutation"
RESULTS = ROOT / "stress" / "results"

#: Each module of the storage and replay core, with the test files that cover it: fast
#: files that exercise the module directly (the slow batteries are left out; mutmut runs
#: only the tests among these that reach the mutated function).
MODULES: dict[str, tuple[str, ...]] = {
    "disk/framing": ("test_format", "test_crash_tails", "test_crash_bitflips", "test_mutation_regressions"),
    "disk/log": ("test_format", "test_crash_tails", "test_crash_io_faults", "test_crash_midlog",
                 "test_mutation_regressions"),
    "disk/index": ("test_format", "test_saver", "test_crash_index", "test_mutation_regressions"),
    "disk/sidecar": ("test_sidecar", "test_crash_index"),
    "disk/generations": ("test_retention", "test_crash_io_faults", "test_mutation_regressions",
                         "test_saver"),
    "disk/store": ("test_saver", "test_retention", "test_crash_security", "test_mutation_regressions"),
    "values/reader": ("test_format", "test_witness", "test_saver", "test_differential_channels"),
    "values/records": ("test_format", "test_witness", "test_saver", "test_differential_channels"),
    "values/codec": ("test_format", "test_differential_serde", "test_async_writes", "test_saver"),
    "values/witness": ("test_witness",),
    "maintenance/compaction": ("test_saver", "test_retention", "test_mutation_regressions",
                               "test_crash_retention"),
    "maintenance/repair": ("test_crash_midlog", "test_crash_bitflips", "test_cli_errors"),
    "maintenance/verify": ("test_crash_midlog", "test_crash_bitflips", "test_cli_errors"),
    "replay/calls": ("test_replay_behaviour", "test_replay_pending"),
    "replay/journal": ("test_replay_behaviour", "test_replay_durability", "test_replay_pending"),
    "replay/adapter": ("test_replay_behaviour", "test_replay_durability", "test_replay_pending"),
    "saver/runs": ("test_saver", "test_busy_threads"),
    "saver/tool_log": ("test_replay_behaviour", "test_replay_durability", "test_replay_crash"),
}

#: The verdict on each survivor that is not a missing test: an equivalent mutant, and why
#: it cannot change behaviour. Keyed by mutmut's mutant name; the value starts with the
#: mutated line as mutmut shows it (so a verdict goes stale, and says so, when the source
#: moves) and then the reason.
VERDICTS: dict[str, tuple[str, str]] = {}

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
        "use_git_change_detection = false\n"
    )


def _prepare(module: str, tests: tuple[str, ...]) -> Path:
    """A fresh scratch copy of the project for one module's run."""
    work = SCRATCH / module.replace("/", ".")
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


def _mutmut(work: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("mutmut")
    return subprocess.run(["nice", str(exe), *args], cwd=work, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


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
    return list(_meta(work)[0])


def _meta(work: Path) -> tuple[dict[str, int | None], dict[str, float]]:
    codes: dict[str, int | None] = {}
    durations: dict[str, float] = {}
    for meta in (work / "mutants").rglob("*.py.meta"):
        data = json.loads(meta.read_text())
        codes.update(data.get("exit_code_by_key", {}))
        durations.update(data.get("durations_by_key", {}))
    return codes, durations


def _spread(names: list[str], k: int) -> list[str]:
    """``k`` of the names, evenly spaced over the module (a fixed sample, not random)."""
    if k >= len(names):
        return names
    return [names[(i * len(names)) // k] for i in range(k)]


def run_module(module: str, max_mutants: int | None, children: int) -> ModuleResult:
    """Mutate one module and run its tests against each mutant."""
    tests = MODULES[module]
    result = ModuleResult(module, tests)
    work = _prepare(module, tests)
    start = time.monotonic()
    chosen: list[str] = []
    if max_mutants is not None:
        chosen = _spread(_generate_only(work), max_mutants)
    proc = _mutmut(work, "run", "--max-children", str(children), *chosen)
    result.seconds = time.monotonic() - start
    (work / "mutmut-run.log").write_text(proc.stdout + proc.stderr)
    codes, _ = _meta(work)
    if chosen:
        codes = {k: v for k, v in codes.items() if k in set(chosen)}
    result.statuses = {k: STATUS.get(v, "suspicious") for k, v in codes.items()}
    if proc.returncode != 0 and not any(s != "not checked" for s in result.statuses.values()):
        result.error = (proc.stdout + proc.stderr)[-3000:]
    for name, status in result.statuses.items():
        if status in ("survived", "no tests", "suspicious"):
            shown = _mutmut(work, "show", name)
            result.diffs[name] = _trim_diff(shown.stdout)
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


def _commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def write_report(results: list[ModuleResult], commit: str, argv: list[str], path: Path) -> None:
    """Write (or extend) the markdown report of a run."""
    out = [f"# Mutation testing at {commit}", "",
           f"Command: `python -m stress.mutation {' '.join(argv)}` (mutmut 3, niced, 2-core machine).", "",
           "| module | generated | killed | survived | timed out | no tests | equivalent | score | time |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        survivors = [n for n, s in r.statuses.items() if s in ("survived", "no tests", "suspicious")]
        equivalent = sum(1 for n in survivors if not verdict(n, r.diffs[n]).startswith("**"))
        killed = r.count("killed") + r.count("timeout")
        real = len(r.statuses) - equivalent
        score = f"{100 * killed / real:.1f}%" if real else "-"
        out.append(f"| {r.module} | {len(r.statuses)} | {r.count('killed')} | {r.count('survived')} | "
                   f"{r.count('timeout')} | {r.count('no tests')} | {equivalent} | {score} | "
                   f"{r.seconds:.0f} s |")
    out += ["", "Score: killed (timeouts included) over the mutants that are not equivalent.", "",
            "Tests per module: " + "; ".join(f"`{r.module}`: {', '.join(r.tests)}" for r in results), ""]
    for r in results:
        if r.error:
            out += [f"## {r.module}: mutmut failed", "", "```", r.error, "```", ""]
        survivors = sorted(n for n, s in r.statuses.items() if s in ("survived", "no tests", "suspicious"))
        if not survivors:
            continue
        out += [f"## {r.module}: survivors", ""]
        for name in survivors:
            out += [f"- `{name}` ({r.statuses[name]}): {verdict(name, r.diffs[name])}", "", "  ```diff"]
            out += ["  " + ln for ln in r.diffs[name].splitlines()] + ["  ```", ""]
    path.write_text("\n".join(out) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run each module, write the report."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="a module to mutate (repeatable; default: every module of MODULES)")
    parser.add_argument("--max-mutants", type=int, default=None,
                        help="run at most K mutants per module, evenly spaced over it (default: all)")
    parser.add_argument("--children", type=int, default=2, help="mutants run at once (default: 2)")
    parser.add_argument("--report", default=None, help="the report's path (default: "
                        "stress/results/mutation-<commit>.md)")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    commit = _commit()
    path = Path(args.report) if args.report else RESULTS / f"mutation-{commit}.md"
    results = []
    for module in args.module or list(MODULES):
        print(f"{module}: mutating, tests {', '.join(MODULES[module])}", flush=True)
        r = run_module(module, args.max_mutants, args.children)
        results.append(r)
        print(f"{module}: {len(r.statuses)} mutants, {r.count('killed')} killed, {r.count('survived')} "
              f"survived, {r.count('timeout')} timed out, {r.seconds:.0f} s" + (" (mutmut failed)" if r.error
                                                                                else ""), flush=True)
        write_report(results, commit, argv, path)
    print(f"report: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The code's shape: no function or method in src/ or benchmarks/ over :data:`MAX_LINES` lines, counted from
its ``def`` line to its last (docstring included, decorators not)."""

import ast
from fnmatch import fnmatch

from conftest import ROOT

# TEMPORARY allow-list: the files other engineers are rewriting now (the execution layer, the classifier,
# score, io.tables/arrays, two benchmarks), not checked. Empty it when they are done: the test then holds for
# every file.
ALLOWED = (
    "src/beatflow/worker/*",
    "src/beatflow/stage.py",
    "src/beatflow/job.py",
    "src/beatflow/rules.py",
    "src/beatflow/worker_env.py",
    "src/beatflow/gpus.py",
    "src/beatflow/classify/*",
    "src/beatflow/score/scores.py",
    "src/beatflow/io/tables.py",
    "src/beatflow/io/arrays.py",
    "benchmarks/run_workflow.py",
    "benchmarks/probe_worker.py",
)
MAX_LINES = 60


def long_functions(base=ROOT, roots=("src", "benchmarks"), allowed=ALLOWED) -> list[str]:
    """``path:line name (n lines)`` of every function longer than :data:`MAX_LINES` under ``base``'s ``roots``,
    but in the ``allowed`` files (patterns)."""
    found = []
    for root in roots:
        for path in sorted((base / root).rglob("*.py")):
            name = path.relative_to(base).as_posix()
            if any(fnmatch(name, pattern) for pattern in allowed):
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=name)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_LINES:
                        found.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_over_60_lines():
    assert long_functions() == []


def test_the_check_finds_a_long_function(tmp_path):
    (tmp_path / "src").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "src" / "long.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    assert long_functions(tmp_path, ("src",)) == [f"src/long.py:5 long ({MAX_LINES + 1} lines)"]
    assert long_functions(tmp_path, ("src",), allowed=("src/*",)) == []

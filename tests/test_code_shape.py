"""The code's shape: no function or method in src/ or benchmarks/ over :data:`MAX_LINES` lines, counted from
its ``def`` line to its last (docstring included, decorators not)."""

import ast

from conftest import ROOT

MAX_LINES = 60


def long_functions(base=ROOT, roots=("src", "benchmarks")) -> list[str]:
    """``path:line name (n lines)`` of every function longer than :data:`MAX_LINES` under ``base``'s ``roots``."""
    found = []
    for root in roots:
        for path in sorted((base / root).rglob("*.py")):
            name = path.relative_to(base).as_posix()
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

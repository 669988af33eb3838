"""From a rule to the function that does its work in one hop: every rule with a script names
``scripts/<rule>.py`` and, in its docstring, the stage functions; the script's ``main(snakemake)`` imports them
from the science packages and calls them, and its only other statement hands ``main`` to
:func:`beatflow.stage.run` (here or in a warm worker). And the science packages never import the execution
layer."""

import ast
import importlib
import inspect
import re
import runpy

import pytest
from conftest import ROOT

from beatflow.stage import LOADED

EXECUTION = ("beatflow.stage", "beatflow.worker", "beatflow.gpus")
SETUP = ("beatflow.backend",)  # what a script uses besides its stage: the backend it runs on


def rules() -> dict[str, tuple[str, str]]:
    """Rule → its docstring and the script its ``script:`` directive names (relative to the repository)."""
    found = {}
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for rule, body in re.findall(r"^rule (\w+):(.*?)(?=^rule |\Z)", smk.read_text(), re.S | re.M):
            if script := re.search(r'^\s+script:\s+"([^"]+)"', body, re.M):
                doc = " ".join(re.match(r'\s+"""(.*?)"""', body, re.S).group(1).split())
                found[rule] = (doc, str((smk.parent / script.group(1)).resolve().relative_to(ROOT)))
    return found


def scripts() -> dict[str, str]:
    return {rule: script for rule, (_, script) in rules().items()}


def stage_functions(script) -> list:
    """The functions from beatflow's science packages that the script's ``main`` calls by name."""
    tree = ast.parse(script.read_text())
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")
    imported = {
        alias.asname or alias.name: (node.module, alias.name)
        for node in ast.walk(main)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    calls = [node.func.id for node in ast.walk(main) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
    found = [getattr(importlib.import_module(imported[n][0]), imported[n][1]) for n in calls if n in imported]
    return [f for f in found if inspect.isfunction(f) and f.__module__.startswith("beatflow.")]


def test_the_workflow_has_its_scripted_rules():
    assert set(scripts()) >= {"ingest", "segment", "embed", "train", "score", "plot", "holter", "evaluate"}


@pytest.mark.parametrize("rule", sorted(scripts()))
def test_a_rule_reaches_its_stage_in_one_hop(rule):
    from beatflow.worker.groups import GROUPS, group_of

    assert scripts()[rule] == f"scripts/{rule}.py"  # a warm worker loads the rule's script by this name
    script = ROOT / scripts()[rule]
    body = ast.parse(script.read_text()).body
    assert [type(node).__name__ for node in body] == ["ImportFrom", "FunctionDef", "Expr"]
    assert ast.unparse(body[0]) == "from beatflow.stage import run"
    assert ast.unparse(body[2]) == "run(snakemake, main)"
    stages = [f for f in stage_functions(script) if not f.__module__.startswith(EXECUTION + SETUP)]
    assert stages, f"{rule}: main calls no function of a science package"
    for function in stages:  # the science entry points: public, documented, and named in the rule's docstring
        assert not function.__name__.startswith("_") and function.__doc__, function
        assert f"`{function.__module__}.{function.__name__}`" in rules()[rule][0], rule
    assert f"({scripts()[rule]})" in rules()[rule][0]
    main = runpy.run_path(str(script), init_globals={"snakemake": None}, run_name=LOADED)["main"]
    assert group_of(main) in GROUPS
    owners = [name for name, g in GROUPS.items() for f in stages if f.__module__.startswith(g.packages)]
    assert len(set(owners)) == 1, f"{rule}: its stages belong to {owners}"


def test_no_science_module_imports_the_execution_layer():
    src = ROOT / "src" / "beatflow"
    for path in sorted(src.rglob("*.py")):
        module = ".".join(path.relative_to(src.parent).with_suffix("").parts)
        if module.startswith(EXECUTION):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            assert not any(name.startswith(EXECUTION) for name in names), f"{module} imports {names}"


def test_the_holter_scripts_write_each_output_where_the_rules_declare_it(tmp_path):
    """Rule holter's outputs, then rule heart_rate's from them, named anywhere, through their scripts' main (as a
    warm worker or Snakemake runs them)."""
    import numpy as np
    import wfdb
    from test_report_plots import FS, scores_rows
    from test_worker import main_of, smk_of

    from beatflow.io.tables import write_frame, write_signal

    scores = scores_rows(150, 1.0)
    write_frame(scores, tmp_path / "scores.parquet")
    write_signal({"MLII": np.zeros(int(151 * FS), np.float32)}, FS, tmp_path / "signal.parquet", gpu=False)
    out = tmp_path / "elsewhere"
    (out / "annotations").mkdir(parents=True)
    outputs = {"summary": out / "h.json", "annotations": out / "annotations" / "r.atr"}
    inputs = {"signal": tmp_path / "signal.parquet", "scores": tmp_path / "scores.parquet"}
    named = [{k: str(v) for k, v in files.items()} for files in (inputs, outputs)]
    main_of("holter")(smk_of("holter", *named, tmp_path / "holter.log", {}, record="r"))
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["h.json", "r.atr"]
    assert (wfdb.rdann(str(out / "annotations" / "r"), "atr").sample == scores.peak.to_numpy()).all()
    figures = {"heart_rate_html": out / "figures" / "hr.html", "heart_rate_png": out / "figures" / "hr.png"}
    (out / "figures").mkdir()
    named = [{k: str(v) for k, v in files.items()} for files in ({"summary": out / "h.json"} | inputs, figures)]
    main_of("heart_rate")(smk_of("heart_rate", *named, tmp_path / "heart_rate.log", {}, record="r"))
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["hr.html", "hr.png"]
    assert figures["heart_rate_png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

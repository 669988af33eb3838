"""config/README.md's "What an edit reruns" table and its SLURM table against the workflow itself: the rules
that read each config section (their ``params``) and every rule downstream of them in the rule graph."""

import re
import subprocess
import sys

from conftest import ROOT

from beatflow.gpus import GPU_STAGES

README = ROOT / "config" / "README.md"


def rule_graph() -> dict[str, set[str]]:
    """Rule → the rules that take its output, from ``snakemake --rulegraph`` on the demo (target ``all``)."""
    dot = subprocess.run(
        [sys.executable, "-m", "snakemake", "--rulegraph", "--quiet", "all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = dict(re.findall(r'(\d+)\[label = "(\w+)"', dot))
    after = {name: set() for name in names.values()}
    for a, b in re.findall(r"(\d+) -> (\d+)", dot):
        after[names[a]].add(names[b])
    after.pop("all")
    for targets in after.values():
        targets.discard("all")
    return after


def readers() -> dict[str, str]:
    """Config section → the rule whose ``params`` carry it."""
    out = {}
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rule, body in re.findall(r"^rule (\w+):(.*?)(?=^rule |\Z)", smk.read_text(), re.S | re.M):
            for section in re.findall(r'params:.*?(?:^\s+\w+=config\["(\w+)"\])', body, re.S | re.M):
                out[section] = rule
    return out


def downstream(graph: dict[str, set[str]], rule: str) -> set[str]:
    seen, todo = {rule}, [rule]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_what_an_edit_reruns_is_the_rule_graph():
    graph = rule_graph()
    table = dict(re.findall(r"^\| `(\w+)\.\*` \| ([^|(]+)", README.read_text(), re.M))
    sections = readers()
    assert set(sections) == {"ingest", "segment", "embed", "train", "score"}
    assert set(table) == set(sections), "every section that a rule reads has its row"
    for section, rule in sections.items():
        listed = {name.strip() for name in table[section].split(",")}
        assert listed == downstream(graph, rule), section


def test_the_gpu_rules_agree_everywhere():
    """beatflow.gpus.GPU_STAGES is the GPU rules' one home: the rules that declare ``gpu=1``, the SLURM
    profiles' (which read it) and config/README's SLURM table must name the same rules."""
    import yte

    declared = set()
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rule, body in re.findall(r"^rule (\w+):(.*?)(?=^rule |\Z)", smk.read_text(), re.S | re.M):
            if re.search(r"^\s+resources:\s*\n\s+gpu=1,", body, re.M):
                declared.add(rule)
    assert declared == set(GPU_STAGES)
    for profile in ("workflow/profiles/slurm", "tests/slurm/ci"):
        resources = yte.process_yaml((ROOT / profile / "config.yaml").read_text())["set-resources"]
        assert {rule for rule, asked in resources.items() if asked.get("gpu") == 1} == declared, profile
    row = re.search(r"^\| ([\w, ]+) \| `-p <GPU partition> --gpus=1`", README.read_text(), re.M)
    assert row and {name.strip() for name in row.group(1).split(",")} == declared


def test_every_config_key_has_its_row():
    """config/README.md's key table names every key of the schema (rows may group a section's keys)."""
    import yaml

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    rows = re.findall(r"^\| (`[^|]+`) \| ", README.read_text(), re.M)
    named = set()
    for row in rows:
        keys = re.findall(r"`([\w.]+)`", row)
        if not keys:
            continue
        section = keys[0].split(".")[0] if "." in keys[0] else ""
        named.update(k if "." in k or not section else f"{section}.{k}" for k in keys)
    for key, spec in schema["properties"].items():
        if spec.get("type") == "object":
            for sub in spec["properties"]:
                assert f"{key}.{sub}" in named, f"{key}.{sub}"
        else:
            assert key in named, key


def test_the_key_table_is_the_schema():
    """config/README.md's key table is the one ``python -m beatflow.config --markdown`` generates from the
    schema: every key's default, range and description, written once (in the schema)."""
    from beatflow.config import markdown_table

    text = README.read_text()
    marker = "<!-- generated from the schema by `python -m beatflow.config --markdown`"
    assert marker in text
    table = text.split(marker, 1)[1].split("\n", 1)[1]
    table = table[: table.index("\n\n") + 1]
    assert table == markdown_table(), "regenerate the key table: python -m beatflow.config --markdown"


def test_the_command_prints_the_table():
    out = subprocess.run(
        [sys.executable, "-m", "beatflow.config", "--markdown"], capture_output=True, text=True, check=True
    ).stdout
    from beatflow.config import markdown_table

    assert out == markdown_table() and out.count("\n") == 2 + len(__import__("beatflow.config").config.keys())

"""The workflow's config outside Snakemake: its schema, the one home of every key's default.

``workflow/schemas/config.schema.yaml`` holds each key's type, range, description and default. Snakemake
fills the defaults into the run's config when ``workflow/rules/common.smk`` validates it; code that builds
parameters without Snakemake (tests, benchmarks, a warm worker's warm-up, ``python -m`` entry points) calls
:func:`defaults` or :func:`validated`, which apply the same schema the same way.

The schema stays where the workflow layout puts it (``workflow/schemas/``) and is found from this file, two
levels above the package (``src/beatflow``): the package is installed from its checkout (``pip install -e
.``), never without the workflow beside it.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


@functools.cache
def _schema() -> dict:
    import yaml

    if not SCHEMA.exists():
        raise FileNotFoundError(
            f"the config schema {SCHEMA} is missing: beatflow runs from its checkout (pip install -e .)"
        )
    return yaml.safe_load(SCHEMA.read_text())


def schema() -> dict:
    """The config schema (a copy: callers may change it)."""
    return copy.deepcopy(_schema())


def validated(config: dict | None = None) -> dict:
    """``config`` (a copy; None: an empty one) checked against the schema, with every absent key set to its
    default, as ``snakemake.utils.validate(config, schema, set_default=True)`` does in a run.

    Raises
    ------
    jsonschema.ValidationError
        When a value is out of range, of the wrong type, or a key is unknown.
    """
    from jsonschema import Draft202012Validator, validators

    properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, props, instance, subschema):
        for name, sub in props.items():
            if "default" in sub and isinstance(instance, dict):
                instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from properties(validator, props, instance, subschema)

    filling = validators.extend(Draft202012Validator, {"properties": set_defaults})
    config = copy.deepcopy(config or {})
    filling(schema()).validate(config)
    return config


def defaults() -> dict:
    """Every config key at its default (the schema's ``default:``), by section."""
    return validated({})


def keys() -> dict[str, dict]:
    """Every key's schema, by its dotted name (``segment.nms_window_s``), in the schema's order."""
    out = {}
    for key, spec in _schema()["properties"].items():
        if spec.get("type") == "object":
            out.update({f"{key}.{sub}": s for sub, s in spec["properties"].items()})
        else:
            out[key] = spec
    return copy.deepcopy(out)


def _value(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _range(spec: dict) -> str:
    """A key's allowed values, in interval notation (``(0, 0.2]``: above 0, at most 0.2)."""
    if "enum" in spec:
        return ", ".join(_value(v) for v in spec["enum"])
    if spec.get("type") == "boolean":
        return "true, false"
    if spec.get("type") == "array":
        return f"{spec['minItems']} numbers, each {_range(spec['items'])}"
    lo = spec.get("minimum", spec.get("exclusiveMinimum"))
    hi = spec.get("maximum", spec.get("exclusiveMaximum"))
    if lo is not None and hi is not None:
        return f"{'(' if 'exclusiveMinimum' in spec else '['}{lo}, {hi}{')' if 'exclusiveMaximum' in spec else ']'}"
    if lo is not None:
        return f"{'>' if 'exclusiveMinimum' in spec else '≥'} {lo}"
    if hi is not None:
        return f"{'<' if 'exclusiveMaximum' in spec else '≤'} {hi}"
    return "a path" if spec.get("type") == "string" else "—"


def markdown_table() -> str:
    """config/README.md's key table, generated from the schema (each key's default, range and description):
    ``python -m beatflow.config --markdown``; tests/test_config_readme.py checks that the README holds it."""
    lines = ["| key | default | range | what it sets |", "|---|---|---|---|"]
    for name, spec in keys().items():
        default = _value(spec["default"]) if "default" in spec else "—"
        lines.append(f"| `{name}` | `{default}` | {_range(spec)} | {spec['description']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m beatflow.config", description="The config schema's keys.")
    p.add_argument("--markdown", action="store_true", help="config/README.md's key table (Markdown)")
    args = p.parse_args(argv)
    print(markdown_table() if args.markdown else json.dumps(defaults(), indent=1), end="" if args.markdown else "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

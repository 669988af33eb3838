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

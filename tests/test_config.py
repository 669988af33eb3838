"""Every config key has exactly one default, in the schema: the params dataclasses, config/config.yaml and
config/README.md hold none, and Snakemake's validation fills every section in, absent ones too."""

import dataclasses

import pytest
import yaml
from conftest import ROOT

from beatflow.config import SCHEMA, defaults, schema, validated
from beatflow.detect.params import SegmentParams
from beatflow.embed.rows import EmbedParams
from beatflow.io.ingest import IngestParams
from beatflow.learn.train import TrainParams
from beatflow.score.scores import ScoreParams

PARAMS = (IngestParams, SegmentParams, EmbedParams, TrainParams, ScoreParams)


def leaves(properties: dict, prefix: str = ""):
    """``(dotted key, subschema)`` of every key that is not a section."""
    for name, sub in properties.items():
        if sub.get("type") == "object" and "properties" in sub:
            yield from leaves(sub["properties"], f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", sub


def test_the_schema_is_the_workflows():
    assert SCHEMA == ROOT / "workflow" / "schemas" / "config.schema.yaml"
    assert (
        'validate(config, "../schemas/config.schema.yaml", set_default=True)'
        in (ROOT / "workflow" / "rules" / "common.smk").read_text()
    )


def test_every_key_has_a_default_and_a_description_in_the_schema():
    keys = dict(leaves(schema()["properties"]))
    assert len(keys) >= 37
    assert [k for k, sub in keys.items() if "default" not in sub] == []
    assert [k for k, sub in keys.items() if not sub.get("description")] == []
    for name, sub in schema()["properties"].items():  # sections absent from config.yaml are filled in too
        if sub.get("type") == "object":
            assert sub.get("default") == {}, name


def test_the_contract_keys_are_in_the_schema():
    keys = dict(leaves(schema()["properties"]))
    for key in (
        "records",
        "device",
        "segment.wavelet_width_s",
        "segment.nms_window_s",
        "segment.min_rr_s",
        "segment.max_rr_s",
        "embed.length_s",
        "train.epochs",
        "train.batch_size",
        "train.latent_dim",
        "train.train_fraction",
        "train.seed",
        "score.quantile",
    ):
        assert key in keys, key
    assert keys["train.train_fraction"]["default"] == 0.75


@pytest.mark.parametrize("params", PARAMS, ids=lambda c: c.__name__)
def test_a_params_class_has_no_defaults_and_holds_its_whole_section(params):
    fields = dataclasses.fields(params)
    assert [
        f.name for f in fields if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    ] == []
    assert {f.name for f in fields} == set(schema()["properties"][params.SECTION]["properties"])
    built = params.defaults()
    for f in fields:
        value = getattr(built, f.name)
        assert (list(value) if isinstance(value, tuple) else value) == defaults()[params.SECTION][f.name]


def test_config_yaml_restates_no_default():
    user = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert set(user) <= {"records", "device"}  # the sections: only what a user overrides


def test_config_readme_lists_every_key():
    """The README's defaults are not written by hand: its key table is generated from the schema
    (tests/test_config_readme.py checks that it is the generated one)."""
    text = (ROOT / "config" / "README.md").read_text()
    table = text.split("## Config")[1].split("\n## ")[0]
    for key, _ in leaves(schema()["properties"]):
        assert f"| `{key}` | `" in table, key


def test_validation_fills_absent_sections_and_keeps_overrides():
    config = validated({"segment": {"nms_window_s": 0.25}})
    assert config["segment"]["nms_window_s"] == 0.25
    assert config["segment"]["min_rr_s"] == defaults()["segment"]["min_rr_s"]
    assert config["train"] == defaults()["train"]
    assert validated({}) == defaults() and validated({}) is not validated({})


def test_snakemake_fills_the_same_defaults():
    from snakemake.utils import validate

    config = {"records": "x.tsv"}
    validate(config, str(SCHEMA), set_default=True)
    assert config == {**defaults(), "records": "x.tsv"}


def test_validation_rejects_unknown_keys_and_values_out_of_range():
    from jsonschema import ValidationError

    with pytest.raises(ValidationError):
        validated({"segment": {"thresold": 0.5}})
    with pytest.raises(ValidationError):
        validated({"train": {"train_fraction": 1.5}})

"""docs/contracts.md is the repository's copy of the team's contracts (../shared/DESIGN.md, the source)."""

import pytest
from conftest import ROOT

SHARED = ROOT.parent / "shared" / "DESIGN.md"


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/DESIGN.md is not beside this clone")
def test_the_contracts_in_the_repository_are_the_teams():
    copy = (ROOT / "docs" / "contracts.md").read_text().split("\n", 1)[1]  # after the line saying where it is from
    assert copy == SHARED.read_text()


def test_the_contracts_name_every_output_file():
    text = (ROOT / "docs" / "contracts.md").read_text()
    for name in (
        "signal.parquet",
        "beats.parquet",
        "embedding.npy",
        "model.pt",
        "scores.parquet",
        "latent.parquet",
        "holter.json",
        "evaluation.json",
    ):
        assert f"`{name}`" in text, name

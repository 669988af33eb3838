"""Reading and writing: source recordings → ``signal.parquet`` (:mod:`.ingest`), parquet tables (:mod:`.tables`),
``.npy`` arrays through kvikio or numpy (:mod:`.arrays`), atomic writes (:mod:`.atomic`) and the signal checks
at ingest (:mod:`.signal_checks`); and the names of a record's stage artifacts (:data:`ARTIFACTS`)."""

from __future__ import annotations

from pathlib import Path

# A record's stage artifacts in results/{record}/ (docs/contracts.md), by the names the stage functions take
# them under in their ``inputs`` and ``outputs``; the rules in workflow/rules/ write the same file names.
ARTIFACTS = {
    "signal": "signal.parquet",
    "beats": "beats.parquet",
    "embedding": "embedding.npy",
    "model": "model.pt",
    "scores": "scores.parquet",
    "latent": "latent.parquet",
    "annotations": "beats.atr",
}


def artifact_paths(folder, **replaced) -> dict[str, Path]:
    """One record's :data:`ARTIFACTS` in ``folder``, named as in ``results/{record}/``, some of them
    ``replaced`` (name → path)."""
    return {**{name: Path(folder) / file for name, file in ARTIFACTS.items()}, **replaced}

"""How much the anomaly scores of one record depend on the training seed.

    python -m benchmarks.seed_spread data/holter20h.csv data/holter20h_truth.csv --seeds 0 1 2 3 \
        --out benchmarks/results/seed-spread-h200.json [--device gpu]

Ingests, segments and embeds the record once (CSV sampled at ``--fs``, every column but ``time_s`` a lead),
then trains and scores it once per seed with the default config (``config/config.yaml``), and evaluates each
run against the truth.
Per seed: AUROC per label, the share of normal beats flagged, and that share by the label of the beat
before and after (the normal beats next to ectopic ones are where false alarms gather).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import artifact_paths, band_hz, config, embed_length_s, stage_params, write_json

NEIGHBOURS = ("N", "A", "V", "L")


def flagged_by_neighbour(table, truth, fs: float) -> dict:
    """Share of normal beats flagged, overall and by the label of the true beat before / after."""
    from beatflow.evaluate import TOLERANCE_S, match

    labels = truth["label"].to_numpy().astype(str)
    ti, di = match(truth["sample"].to_numpy(), table.peak.to_numpy(), TOLERANCE_S * fs)
    flagged = table.score.to_numpy()[di] > 1
    normal = labels[ti] == "N"
    before = np.where(ti > 0, labels[np.maximum(ti - 1, 0)], "-")
    after = np.where(ti + 1 < len(labels), labels[np.minimum(ti + 1, len(labels) - 1)], "-")

    def share(sel):
        return round(float(flagged[sel].mean()), 4) if sel.any() else None

    return {
        "normal_flagged": share(normal),
        "after_a_beat_labelled": {k: share(normal & (before == k)) for k in NEIGHBOURS},
        "before_a_beat_labelled": {k: share(normal & (after == k)) for k in NEIGHBOURS},
    }


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", type=Path)
    p.add_argument("truth", type=Path)
    p.add_argument("--fs", type=float, default=250.0)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--epochs", type=int, help="training epochs (default: the config's train.epochs)")
    p.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def main(argv=None) -> None:
    a = parse_args(argv)
    import pandas as pd

    from beatflow.backend import select_backend
    from beatflow.detect.segment import segment
    from beatflow.embed.rows import EmbedParams, embed
    from beatflow.evaluate import evaluate
    from beatflow.io.ingest import TIME, IngestParams, csv_header, ingest
    from beatflow.learn.train import train
    from beatflow.score.scores import score

    backend = select_backend(a.device)
    truth = pd.read_csv(a.truth)
    seg = stage_params()[0]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = artifact_paths(Path(tmp))
        ingest(
            "r",
            {"path": a.csv},
            {"signal": paths["signal"]},
            IngestParams.from_config(config()["ingest"]),
            backend,
            fs=a.fs,
            leads=[c for c in csv_header(a.csv) if c != TIME],
        )
        segment("r", {"signal": paths["signal"]}, {"beats": paths["beats"]}, seg, backend)
        embed(
            "r",
            {"signal": paths["signal"], "beats": paths["beats"]},
            {"embedding": paths["embedding"]},
            EmbedParams.defaults(length_s=embed_length_s(), band_hz=band_hz()),
            backend,
        )
        for seed in a.seeds:
            t0 = time.perf_counter()
            _, tp, sp = stage_params(seed=seed, **({"epochs": a.epochs} if a.epochs else {}))
            train(
                "r",
                {"embedding": paths["embedding"], "beats": paths["beats"], "signal": paths["signal"]},
                {"model": paths["model"]},
                tp,
                backend,
            )
            score("r", paths, paths, sp, backend)
            table = pd.read_parquet(paths["scores"])
            result = evaluate(truth, table, a.fs)
            runs[str(seed)] = {
                "auroc": {k: v["auroc"] for k, v in result["per_label"].items()},
                **flagged_by_neighbour(table, truth, a.fs),
                "train_and_score_s": round(time.perf_counter() - t0, 2),
            }
            print(seed, json.dumps(runs[str(seed)]), flush=True)
    write_json(a.out, {"device": backend.detail, "record": str(a.csv), "seeds": runs})


if __name__ == "__main__":
    main()

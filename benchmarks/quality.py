"""Detection and anomaly quality of beatflow on a suite of synthetic records with truth, beside three
reference R-peak detectors.

    python benchmarks/quality.py            # the full suite: benchmarks/results/quality-<date>.json, docs/quality.md
    python benchmarks/quality.py --quick    # a small subset, short records; writes to a temporary folder
    python benchmarks/quality.py --render benchmarks/results/quality-<date>.json   # docs/quality.md again

For every record of the suite (:mod:`suite`; synthetic, :mod:`beatflow.synth`; the reference detectors read
the first lead, beatflow both, as the segment rule does: peaks on the first lead, the second fused into the
detection envelope and asked by the noise veto):

* detection by beatflow and the reference detectors (:mod:`references`: sleepecg, NeuroKit2, XQRS), each
  evaluated against the truth by ``beatflow.evaluate`` (one-to-one within 150 ms): sensitivity, PPV, F1,
  seconds;
* anomaly quality (readable records only): beatflow's chain in-process on the CPU (signal.parquet → segment →
  embed → train (``EPOCHS`` epochs) → score, the stage functions the workflow's rules call, in a temporary folder),
  then ``evaluate.evaluate``: AUROC of ``score`` per label against normal beats (``A``: timing only,
  ``L``: shape only, ``V``: both, ``P``: the sinus beat that ends a pause, where the record has pauses);
* for beatflow's missed and false beats, what the detector saw there (:mod:`quality_diagnosis`: wavelet
  response against its threshold, a larger response nearby, the distance to the truth), so failures can be
  diagnosed from the JSON.

The "unreadable" records are deliberately buried in noise; they are reported apart and excluded from the
targets. The Markdown is :func:`quality_table.markdown` of the JSON. Real ECG, against its annotations:
``benchmarks/real_ecg.py``.

Needs the ``bench`` extra (``pip install -e ".[bench]"``). Every number in the JSON and in the Markdown is
this script's output.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality_diagnosis import anomaly_diagnosis, by_label, diagnose
from quality_table import auc, markdown
from references import DETECTORS, ROOT, detect, detection_figures, machine, warm_up
from suite import (
    EPOCHS,
    NOISE,
    NOISE_FREE,
    QUICK_MINUTES,
    SEEDS,
    TARGET_AUROC,
    TARGET_DETECTION,
    spec_dict,
    suite,
)

log = logging.getLogger("quality")


# -------------------------------------------------------------------------------------------- detection

def detection(true: np.ndarray, detected: np.ndarray, fs: float) -> tuple[dict, np.ndarray, np.ndarray]:
    """``detected`` against the truth: :func:`references.detection_figures` (``beatflow.evaluate``) under this
    suite's JSON keys, and the matched indices ``(i_true, i_detected)`` (``evaluate.match``, the same
    matching) for the diagnosis."""
    from beatflow.evaluate import TOLERANCE_S, match

    f = detection_figures(true, detected, fs)
    ti, di = match(true, detected, TOLERANCE_S * fs)
    return ({"n_true": f["n_true"], "n_detected": f["n_detected"], "tp": f["true_positives"],
             "fn": f["false_negatives"], "fp": f["false_positives"], "sensitivity": f["sensitivity"],
             "ppv": f["ppv"], "f1": f["f1"]}, ti, di)


def detection_entry(rec: dict) -> tuple[dict, dict, np.ndarray, np.ndarray, np.ndarray]:
    """One record of the suite, generated, every detector run on it and evaluated, beatflow's misses and false
    beats diagnosed: the record's JSON entry, and its leads, true peaks, labels and noise (the first lead
    minus its noise-free rendering) for the anomaly chain."""
    from beatflow.synth import generate

    spec = rec["spec"]
    leads, true, labels = generate(spec)
    x = leads[spec.leads[0]]
    second = leads[spec.leads[1]] if len(spec.leads) > 1 else None
    entry = {"name": rec["name"], "what": rec["what"], "noise": rec["noise"], "unreadable": rec["unreadable"],
             "spec": spec_dict(spec), "labels": {str(k): int(v) for k, v in zip(*np.unique(labels,
                                                                                        return_counts=True))},
             "detection": {}, "missed_by_label": {}}
    clean = generate(replace(spec, **NOISE_FREE))[0][spec.leads[0]]
    for name in DETECTORS:
        peaks, seconds = detect(name, x, spec.fs, second)
        d, ti, di = detection(true, peaks, spec.fs)
        d["seconds"] = round(seconds, 4)
        entry["detection"][name] = d
        entry["missed_by_label"][name] = by_label(labels, ti)
        if name == "beatflow":
            entry["beatflow_diagnosis"] = diagnose(x, clean, spec.fs, true, labels, peaks, ti, di)
    return entry, leads, true, labels, x - clean


def speed(records: list[dict]) -> dict:
    """Seconds per detector (total, per hour of ECG, samples per second, the slowest record) and per stage of
    the anomaly chain, over ``records`` (JSON entries)."""
    hours = sum(r["spec"]["duration_s"] for r in records) / 3600
    samples = sum(r["spec"]["duration_s"] * r["spec"]["fs"] for r in records)
    out = {"hours": hours, "samples": samples, "detectors": {}, "chain": {}}
    for name in DETECTORS:
        secs = {r["name"]: r["detection"][name]["seconds"] for r in records}
        slowest = max(secs, key=secs.get)
        total = sum(secs.values())
        out["detectors"][name] = {"total_s": total, "per_hour_s": total / hours, "msamples_per_s": samples / total / 1e6,
                                  "slowest_record": slowest, "slowest_s": secs[slowest]}
    for r in records:
        for stage, s in r.get("anomaly", {}).get("seconds", {}).items():
            out["chain"][stage] = out["chain"].get(stage, 0.0) + s
    return out


# --------------------------------------------------------------------------------------- the anomaly chain

def chain(rec: dict, leads: dict, true: np.ndarray, labels: np.ndarray, epochs: int, length_s: float,
          noise: np.ndarray, seed: int = 0) -> dict:
    """beatflow's stages in a temporary folder, on the CPU, then ``evaluate.evaluate`` against the truth."""
    import pandas as pd

    from beatflow.backend import select_backend
    from beatflow.detect.params import SegmentParams
    from beatflow.detect.segment import segment
    from beatflow.embed.rows import embed
    from beatflow.evaluate import evaluate
    from beatflow.io.tables import read_frame, write_signal
    from beatflow.learn.train import TrainParams, train
    from beatflow.score.scores import ScoreParams, score

    backend = select_backend("cpu")
    spec = rec["spec"]
    seg, tp, sp = SegmentParams(), TrainParams(epochs=epochs, seed=seed), ScoreParams()
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        paths = {k: d / v for k, v in {"signal": "signal.parquet", "beats": "beats.parquet",
                                       "embedding": "embedding.npy", "model": "model.pt",
                                       "scores": "scores.parquet", "latent": "latent.parquet"}.items()}
        write_signal(leads, spec.fs, paths["signal"], gpu=False)
        for stage, call in (
                ("segment", lambda: segment(rec["name"], paths["signal"], paths["beats"], seg, backend)),
                ("embed", lambda: embed(rec["name"], paths["signal"], paths["beats"], paths["embedding"], length_s,
                                        backend)),
                ("train", lambda: train(rec["name"], paths["embedding"], paths["beats"], paths["model"], tp, backend,
                                                fs=spec.fs)),
                ("score", lambda: score(rec["name"], paths, seg, tp, sp, backend))):
            t0 = time.perf_counter()
            call()
            seconds[stage] = round(time.perf_counter() - t0, 3)
        table = read_frame(paths["scores"])
    result = evaluate(pd.DataFrame({"sample": true, "label": labels}), table, spec.fs)
    result["seconds"] = seconds
    result["flagged"] = int(table.anomaly.sum())
    result["diagnosis"] = anomaly_diagnosis(table, true, labels, spec.fs, len(leads[spec.leads[0]]), length_s,
                                            noise)
    return result


def seed_summary(run: dict) -> dict:
    """What one training seed's chain gives: AUROC per label and the share of normal beats flagged."""
    return {"auroc": {k: v["auroc"] for k, v in run["per_label"].items()}, "normal_flagged": run["normal_flagged"]}


# ------------------------------------------------------------------------------------------------------ main

def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"a few records of {QUICK_MINUTES} min; temporary output")
    p.add_argument("--records", help="comma-separated record names (a subset of the suite)")
    p.add_argument("--epochs", type=int, default=EPOCHS)
    p.add_argument("--seeds", default=",".join(map(str, SEEDS)),
                   help="training seeds (train.seed; the first is diagnosed in full, the others give the AUROC spread)")
    p.add_argument("--no-chain", action="store_true", help="detection only")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads for training (default 1: on a small shared machine more threads are slower)")
    p.add_argument("--render", type=Path, metavar="JSON",
                   help="only write the Markdown again from a JSON this script wrote (to --md, default docs/quality.md)")
    p.add_argument("--json", type=Path, help="output JSON (default benchmarks/results/quality-<date>.json)")
    p.add_argument("--md", type=Path, help="output Markdown (default docs/quality.md)")
    a = p.parse_args(argv)

    if a.render:
        md = a.md or ROOT / "docs" / "quality.md"
        md.write_text(markdown(json.loads(a.render.read_text())) + "\n")
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("beatflow").setLevel(logging.WARNING)
    import torch

    torch.set_num_threads(a.threads)
    import yaml

    from beatflow.detect.params import SegmentParams
    from beatflow.evaluate import TOLERANCE_S
    from beatflow.score.scores import ScoreParams

    length_s = float(yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["embed"]["length_s"])
    date = datetime.now(UTC)
    seeds = [int(v) for v in a.seeds.split(",")]
    partial = a.quick or a.records or a.no_chain or a.epochs != EPOCHS or seeds != list(SEEDS)
    if partial and (a.json is None or a.md is None):
        out_dir = Path(tempfile.mkdtemp(prefix="beatflow-quality-"))
        a.json = a.json or out_dir / f"quality-{date:%Y%m%d}.json"
        a.md = a.md or out_dir / "quality.md"
    a.json = a.json or ROOT / "benchmarks" / "results" / f"quality-{date:%Y%m%d}.json"
    a.md = a.md or ROOT / "docs" / "quality.md"

    t_start = time.perf_counter()
    info = machine()
    warm_up()
    records = suite(a.quick, a.records.split(",") if a.records else None)
    out_records = []
    for rec in records:
        entry, leads, true, labels, noise = detection_entry(rec)
        if not rec["unreadable"] and not a.no_chain:
            runs = [chain(rec, leads, true, labels, a.epochs, length_s, noise, seed) for seed in seeds]
            entry["anomaly"] = runs[0]
            entry["anomaly"]["seeds"] = {str(seed): seed_summary(run) for seed, run in zip(seeds, runs)}
        out_records.append(entry)
        bf = entry["detection"]["beatflow"]
        log.info("%-22s beatflow sens %.4f ppv %.4f | %s%s", rec["name"], bf["sensitivity"], bf["ppv"],
                 " ".join(f"{n} {entry['detection'][n]['f1']:.4f}" for n in DETECTORS[1:]),
                 "" if "anomaly" not in entry else " | AUROC " + " ".join(
                     f"{k} {auc(v['auroc'])}" for k, v in entry["anomaly"]["per_label"].items())
                 + f" | chain {sum(entry['anomaly']['seconds'].values()):.1f} s")

    info["load_average_1min_end"] = round(os.getloadavg()[0], 2)
    info["torch_threads"] = a.threads
    command = "python benchmarks/quality.py" + (" --quick" if a.quick else "") + (
        f" --records {a.records}" if a.records else "") + (" --no-chain" if a.no_chain else "") + (
        f" --epochs {a.epochs}" if a.epochs != EPOCHS else "") + (f" --seeds {a.seeds}" if seeds != list(SEEDS) else "")
    try:
        json_name = str(a.json.resolve().relative_to(ROOT))
    except ValueError:
        json_name = str(a.json)
    result = {"date": date.strftime("%Y-%m-%d"), "command": command, "json": json_name, "machine": info,
              "tolerance_s": TOLERANCE_S, "targets": {"sensitivity": TARGET_DETECTION, "ppv": TARGET_DETECTION,
                                                      "auroc_A_L": TARGET_AUROC},
              "epochs": a.epochs, "seeds": seeds, "embed_length_s": length_s, "segment_params": asdict(SegmentParams()),
              "score_params": asdict(ScoreParams()), "noise_presets": NOISE,
              "records": out_records, "speed": speed(out_records),
              "total_seconds": time.perf_counter() - t_start}
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(result, indent=1, default=float) + "\n")
    a.md.parent.mkdir(parents=True, exist_ok=True)
    a.md.write_text(markdown(result) + "\n")
    log.info("wrote %s and %s in %.0f s", a.json, a.md, result["total_seconds"])


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))  # works from a checkout without an installed package too
    main()

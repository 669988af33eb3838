"""Detection and anomaly quality of beatflow on a suite of synthetic records with truth, beside three
reference R-peak detectors.

    python -m benchmarks.quality            # the full suite: benchmarks/results/quality-<date>.json, docs/quality.md
    python -m benchmarks.quality --quick    # a small subset, short records; writes to a temporary folder
    python -m benchmarks.quality --render benchmarks/results/quality-<date>.json   # docs/quality.md again

For every record of the suite (:mod:`benchmarks.suite`; synthetic, :mod:`beatflow.synth`; the reference detectors read
the first lead, beatflow both, as the segment rule does: peaks on the first lead, the second fused into the
detection envelope and asked by the noise veto):

* detection by beatflow and the reference detectors (:mod:`benchmarks.references`: sleepecg, NeuroKit2, XQRS), each
  evaluated against the truth by ``beatflow.evaluate`` (one-to-one within 150 ms): sensitivity, PPV, F1,
  seconds;
* anomaly quality (readable records only): beatflow's chain in-process on the CPU (signal.parquet → segment →
  embed → train (``EPOCHS`` epochs) → score, the stage functions the workflow's rules call, in a temporary folder),
  then ``evaluate.evaluate``: AUROC of ``score`` per label against normal beats (``A``: timing only,
  ``L``: shape only, ``V``: both, ``P``: the sinus beat that ends a pause, where the record has pauses);
* for beatflow's missed and false beats, what the detector saw there (:mod:`benchmarks.quality_diagnosis`: wavelet
  response against its threshold, a larger response nearby, the distance to the truth), so failures can be
  diagnosed from the JSON.

The "unreadable" records are deliberately buried in noise; they are reported apart and excluded from the
targets. The Markdown is :func:`benchmarks.quality_table.markdown` of the JSON. Real ECG, against its annotations:
``python -m benchmarks.real_ecg``.

Needs the ``bench`` extra (``pip install -e ".[bench]"``) unless ``--detectors`` leaves sleepecg and NeuroKit2
out. Every number in the JSON and in the Markdown is this script's output.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from beatflow.synth import NOISE, NOISE_FREE
from benchmarks.common import RESULTS, ROOT, artifact_paths, auc, embed_length_s, relative, stage_params, write_json
from benchmarks.quality_diagnosis import anomaly_diagnosis, by_label, diagnose
from benchmarks.quality_table import markdown
from benchmarks.references import chosen, detect, detection_figures, machine, warm_up
from benchmarks.suite import (
    EPOCHS,
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
    return (
        {
            "n_true": f["n_true"],
            "n_detected": f["n_detected"],
            "tp": f["true_positives"],
            "fn": f["false_negatives"],
            "fp": f["false_positives"],
            "sensitivity": f["sensitivity"],
            "ppv": f["ppv"],
            "f1": f["f1"],
        },
        ti,
        di,
    )


def detection_entry(rec: dict, detectors: tuple[str, ...]) -> tuple[dict, dict, np.ndarray, np.ndarray, np.ndarray]:
    """One record of the suite, generated, every detector run on it and evaluated, beatflow's misses and false
    beats diagnosed: the record's JSON entry, and its leads, true peaks, labels and noise (the first lead
    minus its noise-free rendering) for the anomaly chain."""
    from beatflow.synth import generate

    spec = rec["spec"]
    leads, true, labels = generate(spec)
    x = leads[spec.leads[0]]
    second = leads[spec.leads[1]] if len(spec.leads) > 1 else None
    kinds, n = np.unique(labels, return_counts=True)
    entry = {
        "name": rec["name"],
        "what": rec["what"],
        "noise": rec["noise"],
        "unreadable": rec["unreadable"],
        "spec": spec_dict(spec),
        "labels": {str(k): int(v) for k, v in zip(kinds, n)},
        "detection": {},
        "missed_by_label": {},
    }
    clean = generate(replace(spec, **NOISE_FREE))[0][spec.leads[0]]
    for name in detectors:
        peaks, seconds = detect(name, x, spec.fs, second)
        d, ti, di = detection(true, peaks, spec.fs)
        d["seconds"] = round(seconds, 4)
        entry["detection"][name] = d
        entry["missed_by_label"][name] = by_label(labels, ti)
        if name == "beatflow":
            entry["beatflow_diagnosis"] = diagnose(x, clean, spec.fs, true, labels, peaks, ti, di)
    return entry, leads, true, labels, x - clean


def speed(records: list[dict], detectors: tuple[str, ...]) -> dict:
    """Seconds per detector (total, per hour of ECG, samples per second, the slowest record) and per stage of
    the anomaly chain, over ``records`` (JSON entries)."""
    hours = sum(r["spec"]["duration_s"] for r in records) / 3600
    samples = sum(r["spec"]["duration_s"] * r["spec"]["fs"] for r in records)
    out = {"hours": hours, "samples": samples, "detectors": {}, "chain": {}}
    for name in detectors:
        secs = {r["name"]: r["detection"][name]["seconds"] for r in records}
        slowest = max(secs, key=secs.get)
        total = sum(secs.values())
        out["detectors"][name] = {
            "total_s": total,
            "per_hour_s": total / hours,
            "msamples_per_s": samples / total / 1e6,
            "slowest_record": slowest,
            "slowest_s": secs[slowest],
        }
    for r in records:
        for stage, s in r.get("anomaly", {}).get("seconds", {}).items():
            out["chain"][stage] = out["chain"].get(stage, 0.0) + s
    return out


# --------------------------------------------------------------------------------------- the anomaly chain


def chain(
    rec: dict,
    leads: dict,
    true: np.ndarray,
    labels: np.ndarray,
    epochs: int,
    length_s: float,
    noise: np.ndarray,
    seed: int = 0,
) -> dict:
    """beatflow's stages in a temporary folder, on the CPU, then ``evaluate.evaluate`` against the truth."""
    import pandas as pd

    from beatflow.evaluate import evaluate
    from beatflow.io.tables import read_frame, write_signal

    spec = rec["spec"]
    with tempfile.TemporaryDirectory() as tmp:
        paths = artifact_paths(Path(tmp))
        write_signal(leads, spec.fs, paths["signal"], gpu=False)
        seconds = run_stages(rec["name"], paths, spec.fs, length_s, epochs, seed)
        table = read_frame(paths["scores"])
    result = evaluate(pd.DataFrame({"sample": true, "label": labels}), table, spec.fs)
    result["seconds"] = seconds
    result["flagged"] = int(table.anomaly.sum())
    result["diagnosis"] = anomaly_diagnosis(table, true, labels, spec.fs, len(leads[spec.leads[0]]), length_s, noise)
    return result


def run_stages(name: str, paths: dict, fs: float, length_s: float, epochs: int, seed: int) -> dict:
    """segment → embed → train → score on ``paths["signal"]``, CPU backend, the config's parameters: the seconds
    of each."""
    from beatflow.backend import select_backend
    from beatflow.detect.segment import segment
    from beatflow.embed.rows import EmbedParams, embed
    from beatflow.learn.train import train
    from beatflow.score.scores import score
    from benchmarks.common import band_hz

    backend = select_backend("cpu")
    seg, tp, sp = stage_params(epochs=epochs, seed=seed)
    stages = {
        "segment": lambda: segment(name, {"signal": paths["signal"]}, {"beats": paths["beats"]}, seg, backend),
        "embed": lambda: embed(
            name,
            {"signal": paths["signal"], "beats": paths["beats"]},
            {"embedding": paths["embedding"]},
            EmbedParams.defaults(length_s=length_s, band_hz=band_hz()),
            backend,
        ),
        "train": lambda: train(
            name,
            {"embedding": paths["embedding"], "beats": paths["beats"], "signal": paths["signal"]},
            {"model": paths["model"]},
            tp,
            backend,
        ),
        "score": lambda: score(name, paths, paths, sp, backend),
    }
    seconds = {}
    for stage, call in stages.items():
        t0 = time.perf_counter()
        call()
        seconds[stage] = round(time.perf_counter() - t0, 3)
    return seconds


def seed_summary(run: dict) -> dict:
    """What one training seed's chain gives: AUROC per label and the share of normal beats flagged."""
    return {"auroc": {k: v["auroc"] for k, v in run["per_label"].items()}, "normal_flagged": run["normal_flagged"]}


# ------------------------------------------------------------------------------------------------------ main


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"a few records of {QUICK_MINUTES} min; temporary output")
    p.add_argument("--minutes", type=float, help="cut every record to this length (a partial run)")
    p.add_argument("--records", help="comma-separated record names (a subset of the suite)")
    p.add_argument("--detectors", help="comma-separated reference detectors beside beatflow (default: all)")
    p.add_argument("--epochs", type=int, default=EPOCHS)
    p.add_argument(
        "--seeds",
        default=",".join(map(str, SEEDS)),
        help="training seeds (train.seed; the first is diagnosed in full, the others give the AUROC spread)",
    )
    p.add_argument("--no-chain", action="store_true", help="detection only")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads for training (default 1: on a small shared machine more threads are slower)",
    )
    p.add_argument(
        "--render",
        type=Path,
        metavar="JSON",
        help="only write the Markdown again from a JSON this script wrote (to --md, default docs/quality.md)",
    )
    p.add_argument("--json", type=Path, help="output JSON (default benchmarks/results/quality-<date>.json)")
    p.add_argument("--md", type=Path, help="output Markdown (default docs/quality.md)")
    return p.parse_args(argv)


def command(a: argparse.Namespace, seeds: list[int]) -> str:
    """The command line that gives this run again."""
    options = [
        ("--quick", a.quick),
        (f"--minutes {a.minutes:g}" if a.minutes else "", a.minutes),
        (f"--records {a.records}", a.records),
        (f"--detectors {a.detectors}", a.detectors),
        ("--no-chain", a.no_chain),
        (f"--epochs {a.epochs}", a.epochs != EPOCHS),
        (f"--seeds {a.seeds}", seeds != list(SEEDS)),
    ]
    return " ".join(["python -m benchmarks.quality", *(text for text, given in options if given)])


def output_paths(a: argparse.Namespace, partial: bool, date: datetime) -> tuple[Path, Path]:
    """The JSON and Markdown to write: the results folder and docs/ for the full suite, else a temporary
    folder unless given."""
    json_path, md_path = a.json, a.md
    if partial and (json_path is None or md_path is None):
        out_dir = Path(tempfile.mkdtemp(prefix="beatflow-quality-"))
        json_path = json_path or out_dir / f"quality-{date:%Y%m%d}.json"
        md_path = md_path or out_dir / "quality.md"
    return json_path or RESULTS / f"quality-{date:%Y%m%d}.json", md_path or ROOT / "docs" / "quality.md"


def run_record(rec: dict, a: argparse.Namespace, detectors: tuple[str, ...], seeds: list[int], length_s: float):
    """One record's JSON entry: detection, and the anomaly chain once per seed where the record is readable."""
    entry, leads, true, labels, noise = detection_entry(rec, detectors)
    if not rec["unreadable"] and not a.no_chain:
        runs = [chain(rec, leads, true, labels, a.epochs, length_s, noise, seed) for seed in seeds]
        entry["anomaly"] = runs[0]
        entry["anomaly"]["seeds"] = {str(seed): seed_summary(run) for seed, run in zip(seeds, runs)}
    bf = entry["detection"]["beatflow"]
    log.info(
        "%-22s beatflow sens %.4f ppv %.4f | %s%s",
        rec["name"],
        bf["sensitivity"],
        bf["ppv"],
        " ".join(f"{n} {entry['detection'][n]['f1']:.4f}" for n in detectors[1:]),
        ""
        if "anomaly" not in entry
        else " | AUROC "
        + " ".join(f"{k} {auc(v['auroc'])}" for k, v in entry["anomaly"]["per_label"].items())
        + f" | chain {sum(entry['anomaly']['seconds'].values()):.1f} s",
    )
    return entry


def records_of(a: argparse.Namespace) -> list[dict]:
    records = suite(a.quick, a.records.split(",") if a.records else None)
    for rec in records if a.minutes else []:
        rec["spec"] = replace(rec["spec"], duration_s=60.0 * a.minutes)
    return records


def main(argv=None) -> None:
    a = parse_args(argv)
    if a.render:
        md = a.md or ROOT / "docs" / "quality.md"
        md.write_text(markdown(json.loads(a.render.read_text())) + "\n")
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("beatflow").setLevel(logging.WARNING)
    import torch

    from beatflow.evaluate import TOLERANCE_S

    torch.set_num_threads(a.threads)
    detectors, seeds, date = chosen(a.detectors), [int(v) for v in a.seeds.split(",")], datetime.now(UTC)
    partial = bool(
        a.quick or a.minutes or a.records or a.detectors or a.no_chain or a.epochs != EPOCHS or seeds != list(SEEDS)
    )
    json_path, md_path = output_paths(a, partial, date)
    t_start, info = time.perf_counter(), machine()
    warm_up(detectors)
    out_records = [run_record(rec, a, detectors, seeds, embed_length_s()) for rec in records_of(a)]
    info.update(load_average_1min_end=round(os.getloadavg()[0], 2), torch_threads=a.threads)
    seg, _, sp = stage_params()
    result = {
        "date": date.strftime("%Y-%m-%d"),
        "command": command(a, seeds),
        "json": relative(json_path),
        "machine": info,
        "tolerance_s": TOLERANCE_S,
        "detectors": list(detectors),
        "targets": {"sensitivity": TARGET_DETECTION, "ppv": TARGET_DETECTION, "auroc_A_L": TARGET_AUROC},
        "epochs": a.epochs,
        "seeds": seeds,
        "embed_length_s": embed_length_s(),
        "segment_params": asdict(seg),
        "score_params": asdict(sp),
        "noise_presets": NOISE,
        "records": out_records,
        "speed": speed(out_records, detectors),
        "total_seconds": time.perf_counter() - t_start,
    }
    write_json(json_path, result, indent=1)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(markdown(result) + "\n")
    log.info("wrote %s and %s in %.0f s", json_path, md_path, result["total_seconds"])


if __name__ == "__main__":
    main()

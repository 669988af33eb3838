"""Fit the beat classifier on annotated WFDB records and measure it out of database.

    python -m beatflow.classify.fit   # ../shared/mitdb and ../shared/svdb → beat_classes.json
    python -m benchmarks.classes      # the out-of-database figures (:func:`cross_database`)

Each database is a group: the model fitted on one is scored on the other (EC57 VEB/SVEB, every detected
beat), both ways, then on records held out by record (``FOLDS``-fold, grouped by record over both databases);
the shipped model is fitted on every record. Rows are weighted so that every record and every class counts:
each beat by ``1 / sqrt(beats of its class in its record)``, each class to a total in proportion to the square
root of its count.
"""

from __future__ import annotations

import argparse
from functools import cache
from pathlib import Path

import numpy as np

from beatflow.classify.dataset import RecordRows, database_rows, record_leads
from beatflow.classify.model import CLASSES, MODEL_FILE, decide, probabilities, save

ROOT = Path(__file__).resolve().parents[3]
DATABASES = (ROOT.parent / "shared" / "mitdb", ROOT.parent / "shared" / "svdb")
FOLDS = 5
FOLDS_ROW = f"{FOLDS}-fold by record, both"  # the folds' row of out_of_database
PARAMS = {
    "objective": "multiclass",
    "num_class": len(CLASSES),
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 200,
    "feature_fraction": 0.7,
    "bagging_fraction": 0.7,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "verbose": -1,
    "seed": 1,
    "deterministic": True,
    "num_threads": 2,
}
ROUNDS = 300


def training_set(records: list[RecordRows]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(features, class index, weight)`` of the detected beats: each matched reference beat's AAMI class, a
    detection that matches none (noise, a T wave counted twice) Q; each beat twice, with its features over the
    record's leads and over its first lead alone (``alone``: the rows a one-lead record gives)."""
    xs, ys, ws = [], [], []
    for r in records:
        label = np.where(r.label == "-", "Q", r.label)
        keep = np.isin(label, CLASSES)
        y = np.array([CLASSES.index(c) for c in label[keep]], dtype=np.int64)
        weight = 1 / np.sqrt(np.bincount(y, minlength=len(CLASSES))[y])
        for features in (r.features, r.alone):
            xs.append(features[keep])
            ys.append(y)
            ws.append(weight)
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    totals = np.bincount(y, weights=w, minlength=len(CLASSES))
    share = np.sqrt(np.bincount(y, minlength=len(CLASSES)))  # each class's total weight: sqrt of its count
    w = w / totals[y] * share[y] / share.sum() * len(y)
    return x, y, w


def fit(records: list[RecordRows], seed: int = PARAMS["seed"]):
    """A LightGBM booster fitted on ``records``, its row and feature sampling drawn from ``seed``."""
    import lightgbm

    x, y, w = training_set(records)
    return lightgbm.train(PARAMS | {"seed": seed}, lightgbm.Dataset(x, y, weight=w), ROUNDS)


def record_classes(rows: RecordRows, booster) -> np.ndarray:
    """The classes ``booster`` and the rhythm context give the detected beats of ``rows``."""
    prob = probabilities(rows.features, booster)
    leads = cache(lambda: record_leads(rows))  # read once, for the AF episodes' P-wave check and the fusion rule
    classes, _ = decide(prob, rows.features, rows.peak / rows.fs, leads)
    return classes


def scored(records: list[RecordRows], booster, events=None) -> dict:
    """Per record and gross EC57 figures of the booster's classes (:func:`beatflow.evaluate.class_figures`);
    with ``events`` (a callable of a record's rows and classes), also what it returns per record."""
    from beatflow.evaluate import class_figures, cohort_class_figures

    per_record, per_events = {}, {}
    for r in records:
        classes = record_classes(r, booster)
        per_record[r.record] = class_figures(r.reference, classes[r.scored], *r.matched)
        if events is not None:
            per_events[r.record] = events(r, classes)
    out = {"gross": cohort_class_figures(per_record), "records": per_record}
    return out | ({"events": per_events} if events is not None else {})


def grouped_folds(records: list[RecordRows], booster_of, events=None) -> dict:
    """Figures of every record scored by a model fitted on the other folds (records dealt round-robin)."""
    from beatflow.evaluate import cohort_class_figures

    per_record, per_events = {}, {}
    for k in range(FOLDS):
        held = [r for i, r in enumerate(records) if i % FOLDS == k]
        rest = [r for i, r in enumerate(records) if i % FOLDS != k]
        fold = scored(held, booster_of(rest), events)
        per_record.update(fold["records"])
        per_events.update(fold.get("events", {}))
    out = {"gross": cohort_class_figures(per_record), "records": per_record}
    return out | ({"events": per_events} if events is not None else {})


def out_of_database(a: list[RecordRows], b: list[RecordRows], events=None, booster_of=fit) -> dict:
    """The protocol's out-of-database rows on the records of two databases: each scored by ``booster_of`` (a
    callable fitting records) the other, then every record by the folds it is not in; name → per record and
    gross figures (and ``events``, as :func:`scored`)."""
    na, nb = a[0].database, b[0].database
    return {
        f"{na} → {nb}": scored(b, booster_of(a), events),
        f"{nb} → {na}": scored(a, booster_of(b), events),
        FOLDS_ROW: grouped_folds(a + b, booster_of, events),
    }


def fitted_once(booster_of=fit):
    """``booster_of`` that fits each set of records once (by their names) and hands the same booster again."""
    boosters = {}

    def once(records: list[RecordRows]):
        key = tuple((r.database, r.record) for r in records)
        if key not in boosters:
            boosters[key] = booster_of(records)
        return boosters[key]

    return once


def cross_database(a: list[RecordRows], b: list[RecordRows], events=None, booster_of=None) -> dict:
    """The protocol of the module docstring on the records of two databases: :func:`out_of_database`, then each
    database scored by the model fitted on it (for contrast), each database's trees fitted once (``booster_of``:
    a :func:`fitted_once`, which the caller may share)."""
    na, nb = a[0].database, b[0].database
    once = booster_of or fitted_once()
    return out_of_database(a, b, events, once) | {
        f"{na} → {na} (in database)": scored(a, once(a)),
        f"{nb} → {nb} (in database)": scored(b, once(b)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=DATABASES, help="folders of WFDB records")
    parser.add_argument("--cache", type=Path, default=ROOT / "data" / "classify", help="features kept here")
    parser.add_argument("--out", type=Path, default=MODEL_FILE, help="the classifier file to write")
    args = parser.parse_args(argv)
    databases = [database_rows(d, args.cache) for d in args.data]
    booster = fit([r for rows in databases for r in rows])
    records = {d.name: [r.record for r in rows] for d, rows in zip(args.data, databases)}
    save(booster, args.out, trained_on=records, rounds=ROUNDS, params=PARAMS, licence=LICENCE)
    print(f"wrote {args.out}")


LICENCE = (
    "Fitted on the MIT-BIH Arrhythmia Database (Moody GB, Mark RG, IEEE EMB 20(3):45-50, 2001) and the MIT-BIH "
    "Supraventricular Arrhythmia Database (Greenwald SD, Patil RS, Mark RG, Computers in Cardiology 17:461-464, "
    "1990), from PhysioNet (Goldberger AL et al., Circulation 101(23):e215-e220, 2000), under the Open Data "
    "Commons Attribution License v1.0 (ODC-By 1.0)."
)

if __name__ == "__main__":
    main()

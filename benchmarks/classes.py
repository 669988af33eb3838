"""The beat classifier out of database: fit on one database, score the other (``../shared/mitdb`` ↔
``../shared/svdb``), both ways, and on records held out by record over both (also each database's records
apart); then each database resampled to each ``--fs`` rate, read as its first lead alone and with each
``--noise`` preset added, scored by the model fitted on the other as recorded; then the out-of-database rows
again (the 5-fold split by database too) with the trees of each of ``--seeds``; EC57 VEB/SVEB on every beat
beatflow's detector finds (:mod:`beatflow.classify.fit`, which also remakes the shipped model).

    python -m benchmarks.classes      # benchmarks/results/classes-<date>.json, docs/classes.md
    python -m benchmarks.classes --render benchmarks/results/classes-<date>.json   # docs/classes.md again

Every number in the JSON and the Markdown is this script's output.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.common import RESULTS, ROOT, machine, pct, today, write_json

DOC = ROOT / "docs" / "classes.md"


def gross_table(report: dict) -> list[str]:
    rows = [
        "| fitted on → scored on | records | V | V Se % | V +P % | S | S Se % | S +P % | N classed other, median % |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, figures in report.items():
        g = figures["gross"]
        rows.append(
            f"| {name} | {g['records']} | {g['V']['n']} | {pct(g['V']['gross_se'])} | {pct(g['V']['gross_ppv'])} "
            f"| {g['S']['n']} | {pct(g['S']['gross_se'])} | {pct(g['S']['gross_ppv'])} "
            f"| {pct(g['normal_misclassified_median'])} |"
        )
    return rows


def confusion_table(confusion: dict) -> list[str]:
    columns = list(next(iter(confusion.values())))
    rows = ["| reference | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    rows += [f"| {r} | " + " | ".join(str(confusion[r][c]) for c in columns) + " |" for r in confusion]
    return rows


def record_table(records: dict, events: dict) -> list[str]:
    """Per record: its V and S beats' figures and its V runs (reference runs found; output runs true)."""
    rows = [
        "| record | V | V Se % | V +P % | S | S Se % | S +P % | N classed other % | V runs found / reference "
        "| V runs true / given |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, f in records.items():
        runs = events[name]["ventricular"]["runs"]
        rows.append(
            f"| {name} | {f['V']['n']} | {pct(f['V']['se'])} | {pct(f['V']['ppv'])} | {f['S']['n']} "
            f"| {pct(f['S']['se'])} | {pct(f['S']['ppv'])} | {pct(f['normal_misclassified'])} "
            f"| {runs['found']} / {runs['reference']} | {runs['true']} / {runs['output']} |"
        )
    return rows


def markdown(report: dict, spread: dict, seconds: float) -> str:
    from beatflow.classify.fit import PARAMS

    grosses = events_gross(report)
    out = [
        "# Beat classes out of database",
        "",
        "Written by `python -m benchmarks.classes` (do not edit). The classifier (`beatflow.classify`, design note "
        "§8) fitted on one database and scored on the other, on every beat beatflow's detector finds (default "
        "config, CPU), counted as EC57 counts VEB and SVEB: a detected beat matches a reference beat within "
        "150 ms; V +P leaves out detections of reference F and Q beats, S +P those of Q; ventricular "
        "flutter/fibrillation left out; gross figures sum over records before dividing. The shipped model is "
        "fitted on both databases; the rows marked *in database* score records the model was fitted on and "
        "are shown only for contrast. The 5-fold rows *its mitdb / svdb records* split the 5-fold row by "
        "database (a model fitted on both, as the shipped one, on records it has not seen); the rows *resampled "
        "to* score a database resampled to another rate (scipy's polyphase filter, the reference beats' samples "
        "scaled alike), the rows *first lead alone* a database read as a one-lead recording (its own detection "
        "too), the rows *with … noise* a database with the synthetic suite's noise preset of that name "
        "(`beatflow.synth.NOISE`: baseline wander, mains hum, white and muscle noise, in mV) added to each lead, "
        "each with the model fitted on the other database as recorded. "
        f"{seconds:.0f} s on this machine.",
        "",
        *gross_table(report),
        "",
        "The Holter summary's events from these classes (`beatflow.holter`, its signal quality, pauses and AF "
        "detector on the record's leads) against the summary of the annotated beats and rhythms: runs (≥ 3) and "
        "couplets matched by overlap, AF by time (`beatflow.holter.agreement`), summed over records:",
        "",
        *events_table(grosses),
        "",
        *rate_table(grosses),
    ]
    if spread:
        out += [
            "",
            "The out-of-database rows (the 5-fold's split by database too) again with the trees fitted from other "
            "seeds of LightGBM's row and feature "
            f"sampling (the tables above: seed {PARAMS['seed']}, the shipped model's); a figure that moves between "
            "seeds by more than it misses a target by is not a finding about the method:",
            "",
            *spread_table(spread),
        ]
    for name, figures in report.items():
        if "(" in name:  # in database, one database's share of the folds, read otherwise: the tables above only
            continue
        out += [
            "",
            f"## {name}",
            "",
            "Confusion (rows: reference class, `-` = no reference beat; columns: class given, `-` = missed):",
            "",
            *confusion_table(figures["gross"]["confusion"]),
            "",
        ]
        out += record_table(figures["records"], figures["events"])
    return "\n".join(out) + "\n"


def holter_events(rows, classes) -> dict:
    """The Holter summary of a record's detected beats and ``classes`` (signal quality, pauses and the AF
    detector's P-wave check on its leads) against the summary of its annotated beats and rhythms
    (:func:`beatflow.holter.agreement.agreement`); the annotators' ventricular flutter left out of both;
    ``rhythm_labelled``: whether the annotations label rhythms at all (svdb's do not: its AF is unknown)."""
    from beatflow.classify.dataset import record_leads
    from beatflow.holter.agreement import agreement
    from beatflow.holter.reference import read_reference, summary_of_reference
    from beatflow.holter.summary import summary_from_beats

    ref = read_reference(rows.source.with_suffix(".atr"))
    summary = summary_from_beats(
        rows.record,
        rows.peak / rows.fs,
        classes,
        ref["duration_s"],
        excluded=ref["vf_s"],
        signal=lambda: record_leads(rows),
    )
    return agreement(summary, summary_of_reference(ref, rows.record)) | {"rhythm_labelled": ref["rhythm_labelled"]}


def events_gross(report: dict) -> dict:
    """Each out-of-database row's Holter figures summed over its records
    (:func:`beatflow.holter.agreement.gross`), AF over the records whose annotations label rhythms only."""
    from beatflow.holter.agreement import gross

    out = {}
    for name, figures in report.items():
        if "events" in figures:
            events = list(figures["events"].values())
            labelled = [e for e in events if e["rhythm_labelled"]]
            g = gross(events)
            g["af"] = gross(labelled)["af"] if labelled else {"duration_se": None, "duration_ppv": None}
            out[name] = g
    return out


def _se_ppv(f: dict, counts: bool = False) -> str:
    text = f"{pct(f['se'])} / {pct(f['ppv'])}"
    return text + (f" ({f['found']} / {f['reference']})" if counts else "")


def events_table(grosses: dict) -> list[str]:
    """Runs, couplets and AF of each row of :func:`events_gross`."""
    rows = [
        "| fitted on → scored on | V runs Se / +P % (found / reference) | V couplets Se / +P % "
        "| S runs Se / +P % (found / reference) | S couplets Se / +P % "
        "| AF duration Se / +P % (records of a database with rhythm labels) |",
        "|---|---|---|---|---|---|",
    ]
    for name, g in grosses.items():
        v, s, af = g["ventricular"], g["supraventricular"], g["af"]
        rows.append(
            f"| {name} | {_se_ppv(v['runs'], True)} | {_se_ppv(v['couplets'])} | {_se_ppv(s['runs'], True)} "
            f"| {_se_ppv(s['couplets'])} | {pct(af['duration_se'])} / {pct(af['duration_ppv'])} |"
        )
    return rows


def rate_table(grosses: dict) -> list[str]:
    """Heart rate, HRV and pauses of each row of :func:`events_gross`."""
    rows = [
        "| fitted on → scored on | mean rate, largest error (bpm) | minutes within 2 bpm % "
        "| SDNN / rMSSD, median error % | pauses Se / +P % (found / reference) |",
        "|---|---|---|---|---|",
    ]
    for name, g in grosses.items():
        h = g["hrv_median_abs_relative_error"]
        rows.append(
            f"| {name} | {g['mean_bpm_error_max_abs']:.2f} | {pct(g['minutes_within_share'])} "
            f"| {pct(h['sdnn_ms'])} / {pct(h['rmssd_ms'])} | {_se_ppv(g['pauses'], True)} |"
        )
    return rows


def fold_shares(folds: dict, databases: list) -> dict:
    """The rows of the ``folds`` report (:func:`beatflow.classify.fit.grouped_folds`) of each database's
    records apart (``databases``: each one's rows), named ``(its <database> records)``."""
    from beatflow.evaluate import cohort_class_figures

    out = {}
    for rows in databases:
        names = {r.record for r in rows}
        records = {k: v for k, v in folds["records"].items() if k in names}
        share = {"gross": cohort_class_figures(records), "records": records}
        if "events" in folds:
            share["events"] = {k: v for k, v in folds["events"].items() if k in names}
        out[f"(its {rows[0].database} records)"] = share
    return out


def with_fold_shares(report: dict, databases: list) -> dict:
    """``report``'s rows with each database's share of its folds' row (:func:`fold_shares`) right after that row."""
    from beatflow.classify.fit import FOLDS_ROW

    rows = {}
    for name, figures in report.items():
        rows[name] = figures
        if name == FOLDS_ROW:
            rows |= {f"{FOLDS_ROW} {k}": v for k, v in fold_shares(figures, databases).items()}
    return rows


def seed_spread(databases: list, seeds: list[int], report: dict) -> dict:
    """The out-of-database rows' gross figures (:func:`spread_figures`), the folds' share of each database among
    them (:func:`with_fold_shares`), with the trees fitted from each of ``seeds`` (LightGBM's row and feature
    sampling) besides the shipped seed's, whose rows ``report`` has: row name → seed → figures."""
    from functools import partial

    from beatflow.classify.fit import PARAMS, fit, out_of_database

    out = {}
    for seed in (s for s in seeds if s != PARAMS["seed"]):
        rows = with_fold_shares(out_of_database(*databases, holter_events, partial(fit, seed=seed)), databases)
        for name, figures in rows.items():
            out.setdefault(name, {PARAMS["seed"]: spread_figures(report[name])})[seed] = spread_figures(figures)
    return out


def spread_figures(figures: dict) -> dict:
    """A row's gross V and S beats' and V runs' Se and +P, as fractions (None where undefined)."""
    g, runs = figures["gross"], events_gross({"row": figures})["row"]["ventricular"]["runs"]
    return {
        "V Se": g["V"]["gross_se"],
        "V +P": g["V"]["gross_ppv"],
        "S Se": g["S"]["gross_se"],
        "S +P": g["S"]["gross_ppv"],
        "V runs Se": runs["se"],
        "V runs +P": runs["ppv"],
    }


def spread_table(spread: dict) -> list[str]:
    """Per row and figure of :func:`seed_spread`: each seed's value, their mean, lowest and highest."""
    seeds = list(next(iter(spread.values())))
    rows = [
        "| fitted on → scored on | figure | " + " | ".join(f"seed {s} %" for s in seeds) + " | mean % | range % |",
        "|---|---|" + "---|" * (len(seeds) + 2),
    ]
    for name, by_seed in spread.items():
        for figure in next(iter(by_seed.values())):
            values = [by_seed[s][figure] for s in seeds]
            known = [v for v in values if v is not None]
            mean = sum(known) / len(known) if known else None
            span = f"{pct(min(known))}–{pct(max(known))}" if known else pct(None)
            rows.append(f"| {name} | {figure} | " + " | ".join(pct(v) for v in values) + f" | {pct(mean)} | {span} |")
    return rows


def read_otherwise(databases: list, rates: list[float], noises: list[str], cache: Path, booster_of) -> dict:
    """Each database (``databases``: each one's rows as recorded) resampled to each of ``rates`` other than its
    own, read as its first lead alone and with each of the ``noises`` presets (:data:`beatflow.synth.NOISE`)
    added, scored by the model fitted on the other database as recorded
    (``booster_of``, as :func:`beatflow.classify.fit.cross_database` fitted it;
    :func:`beatflow.classify.fit.scored`)."""
    from beatflow.classify.dataset import database_rows
    from beatflow.classify.fit import scored

    out = {}
    for rows, other in ((databases[1], databases[0]), (databases[0], databases[1])):
        ways = [(f"resampled to {fs:g} Hz", {"fs": fs}) for fs in rates if fs != rows[0].fs]
        ways += [("first lead alone", {"leads": 1})] + [(f"with {name} noise", {"noise": name}) for name in noises]
        for way, how in ways:
            again = database_rows(rows[0].source.parent, cache, **how)
            out[f"{other[0].database} → {rows[0].database} ({way})"] = scored(again, booster_of(other), holter_events)
    return out


def main(argv: list[str] | None = None) -> None:
    from beatflow.classify.dataset import database_rows
    from beatflow.classify.fit import DATABASES, cross_database, fitted_once

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=ROOT / "data" / "classify", help="features kept here")
    parser.add_argument("--json", type=Path, default=RESULTS / f"classes-{today()}.json")
    parser.add_argument("--md", type=Path, default=DOC)
    parser.add_argument(
        "--fs", type=float, nargs="*", default=[128.0, 250.0, 500.0], help="rates to resample to (Hz; none: not)"
    )
    parser.add_argument(
        "--noise", nargs="*", default=["heavy"], help="noise presets of beatflow.synth.NOISE to add (none: not)"
    )
    parser.add_argument(
        "--seeds", type=int, nargs="*", default=[2, 3], help="more seeds of the trees' sampling (none: not)"
    )
    parser.add_argument("--render", type=Path, metavar="JSON", help="only write --md from this script's JSON")
    args = parser.parse_args(argv)
    if args.render:
        result = json.loads(args.render.read_text())
        report = {k: v for k, v in result.items() if k not in ("machine", "seconds", "seeds")}
        args.md.write_text(markdown(report, result["seeds"], result["seconds"]))
        print(f"wrote {args.md} from {args.render}")
        return
    t0 = time.perf_counter()
    databases = [database_rows(d, args.cache) for d in DATABASES]
    once = fitted_once()  # each database's trees fitted once, for its rows and those read otherwise
    report = with_fold_shares(cross_database(*databases, events=holter_events, booster_of=once), databases)
    report |= read_otherwise(databases, args.fs, args.noise, args.cache, once)
    spread = seed_spread(databases, args.seeds, report)
    seconds = time.perf_counter() - t0
    write_json(
        args.json,
        {"machine": machine(("lightgbm", "numpy", "scipy")), "seconds": seconds, **report, "seeds": spread},
    )
    args.md.write_text(markdown(report, spread, seconds))
    print(f"wrote {args.json} and {args.md}")


if __name__ == "__main__":
    main()

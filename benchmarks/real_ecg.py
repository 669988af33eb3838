"""beatflow on real ECG: the workflow on annotated WFDB records (by default ``../shared/mitdb``, the 22 DS1
records of the MIT-BIH Arrhythmia Database, and ``../shared/svdb``, 39 records of the MIT-BIH Supraventricular
Arrhythmia Database), beside three open R-peak detectors, evaluated as ANSI/AAMI EC57.

    python -m benchmarks.real_ecg          # benchmarks/results/real-ecg-<folder>-<date>.json each, docs/real_ecg.md
    python -m benchmarks.real_ecg --data ../shared/mitdb --records 203,208   # a subset, to a temporary folder

The workflow runs once, as a user would run it: a records sheet pointing at the WFDB records and their
``.atr`` annotations, ``snakemake --cores N --resources gpu=1`` in a fresh copy of the project
(:func:`benchmarks.run_workflow.run_backend`), default config. Its ``evaluation.json`` files give beatflow's
figures: beats
matched one-to-one within 150 ms, ventricular flutter/fibrillation excluded; per AAMI class the AUROC of
``score`` against N and the flags' sensitivity and +P; the beat classes (``class``) as EC57 scores VEB and
SVEB, with the confusion table; the gross and record-average figures (``beatflow.evaluate.cohort_figures``).
The reference detectors (:mod:`benchmarks.references`: sleepecg, NeuroKit2,
XQRS; ``--detectors`` chooses) read each record's first lead in-process and are evaluated by the same code;
beatflow's detector is
also timed in-process on the same records, so the seconds compare like with like. Every number in the JSON
and the Markdown is this script's output.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from benchmarks.common import MITDB, RESULTS, ROOT, SVDB, auc, pct, relative, today, write_json
from benchmarks.references import DETECTORS, chosen, detect, detection_figures, machine, warm_up
from benchmarks.run_workflow import run_backend

CLASSES = ("V", "S")
LABELS = {"beatflow": "beatflow", "sleepecg": "sleepecg", "neurokit2": "NeuroKit2", "xqrs": "XQRS"}
DATABASE_NAMES = {
    "mitdb": "MIT-BIH Arrhythmia Database, DS1 (360 Hz)",
    "svdb": "MIT-BIH Supraventricular Arrhythmia Database (128 Hz)",
}


def records_in(data: Path, only: list[str] | None) -> list[str]:
    names = sorted(p.stem for p in data.glob("*.hea"))
    missing = sorted(set(only or []) - set(names))
    if missing:
        raise SystemExit(f"records {missing} are not in {data}")
    return [n for n in names if not only or n in only]


def write_sheet(data: Path, records: list[str], path: Path) -> None:
    rows = ["record\tpath\tfs\tleads\ttruth"] + [f"{r}\t{data / r}\t\t\t{data / r}.atr" for r in records]
    path.write_text("\n".join(rows) + "\n")


def references(data: Path, records: list[str], detectors: tuple[str, ...] = DETECTORS) -> dict:
    """Each detector's figures and in-process seconds per record, against the record's annotations."""
    from beatflow.io.physio import read_wfdb
    from beatflow.io.truth import read_truth

    warm_up(detectors)
    out = {}
    for record in records:
        signals, leads, fs = read_wfdb(data / record, None)
        truth, excluded = read_truth(data / f"{record}.atr")
        first, second = signals[leads[0]], signals[leads[1]] if len(leads) > 1 else None
        out[record] = {}
        for name in detectors:
            peaks, seconds = detect(name, first, fs, second)
            out[record][name] = {
                **detection_figures(truth["sample"].to_numpy(), peaks, fs, excluded),
                "seconds": round(seconds, 3),
            }
        print(record, {n: round(v["f1"], 4) for n, v in out[record].items()}, flush=True)
    return out


def gross(per_record: dict, name: str) -> dict:
    rows = [r[name] for r in per_record.values()]
    tp, fp, fn = (sum(r[k] for r in rows) for k in ("true_positives", "false_positives", "false_negatives"))
    return {
        "sensitivity": tp / (tp + fn),
        "ppv": tp / (tp + fp),
        "f1": 2 * tp / (2 * tp + fp + fn),
        "records_f1_below_0.99": sum(r["f1"] < 0.99 for r in rows),
        "min_f1": min(r["f1"] for r in rows),
        "seconds": round(sum(r["seconds"] for r in rows), 2),
    }


def names(result: dict) -> tuple[str, ...]:
    """The detectors of the JSON (all of them where it does not say)."""
    return tuple(result["gross"])


def markdown(results: list[dict]) -> str:
    """The page: each database's figures (one JSON of this script each) under its own heading."""
    lines = ["# beatflow on real ECG", ""]
    lines.append(
        "Made by `python -m benchmarks.real_ecg` (do not edit): "
        + ", ".join(f"{database_name(r)} ({len(r['records'])} records)" for r in results)
        + "."
    )
    for result in results:
        lines += header(result) + anomaly_lines(result) + per_record(result) + class_tables(result)
        lines += [
            "",
            (
                "AUROC cells give the class's beat count in brackets. beatflow's detection figures in the "
                "per-record table are the workflow's (`evaluation.json`); the gross table's beatflow row is its "
                "detector run in-process on the same leads, which gives the same beats."
            ),
        ]
    return "\n".join(lines) + "\n"


def database_name(result: dict) -> str:
    """The database a JSON's records come from, by its folder's name."""
    folder = Path(result["data"]).name
    return DATABASE_NAMES.get(folder, f"`{folder}`")


def header(result: dict) -> list[str]:
    m = result["machine"]
    lines = [
        "",
        f"## {database_name(result)}",
        "",
        (
            f"Made on {result['date']} (commit {m['git_commit']}, {m['cpu']}, "
            f"{m['usable_cores']} cores, CPU backend); the JSON is `{result['json']}`. "
            f"{len(result['records'])} records "
            f"of `{result['data']}`, whole records, default config, one configuration for every record. Beats "
            "match one-to-one within 150 ms; ventricular flutter/fibrillation episodes are excluded (ANSI/AAMI EC57). "
            "The other detectors read the first lead; beatflow reads both, as its segment rule does."
            + (
                f" The detectors' table (in-process runs) is taken from `{result['detectors_from']}`."
                if result.get("detectors_from")
                else ""
            )
        ),
        "",
        "### Detection, gross (summed over records)",
        "",
        "| detector | Se % | +P % | F1 | records with F1 < 0.99 | lowest F1 | seconds (in-process, all records) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names(result):
        g = result["gross"][name]
        lines.append(
            f"| {name} | {pct(g['sensitivity'])} | {pct(g['ppv'])} | {g['f1']:.4f} | "
            f"{g['records_f1_below_0.99']} | {g['min_f1']:.3f} | {g['seconds']:.1f} |"
        )
    return lines


def anomaly_lines(result: dict) -> list[str]:
    wf = result["workflow"]
    c = wf["cohort"]
    lines = []
    if wf["wall_s"] is not None:
        run_line = (
            f"The workflow itself (`snakemake --cores {result['cores']}`, ingest to plots for every record): "
            f"{wf['wall_s']:.0f} s; its evaluate rule gives"
        )
    else:
        run_line = f"The workflow's evaluation.json files (from `{result['results_from']}`, not timed) give"
    lines += [
        "",
        (f"{run_line} gross Se {pct(c['detection']['gross_sensitivity'])} %, +P {pct(c['detection']['gross_ppv'])} %."),
        "",
        "### Anomaly scores (beatflow)",
        "",
        "| class | records (≥ 10 beats) | AUROC vs N, median | lowest (record) | flags: Se % | flags: +P % |",
        "|---|---|---|---|---|---|",
    ]
    for label in CLASSES:
        k = c[label]
        lines.append(
            f"| {label} | {k['auroc_records']} | {auc(k['auroc_median'])} | {auc(k['auroc_min'])} "
            f"({k['auroc_lowest_record']}) | {pct(k['gross_flag_sensitivity'])} | "
            f"{pct(k['gross_flag_ppv'])} |"
        )
    return lines + [
        "",
        (
            f"Normal beats flagged: median over records {pct(c['normal_flagged_median'])} %, "
            f"gross {pct(c['normal_flagged_gross'])} %."
        ),
    ]


def per_record(result: dict) -> list[str]:
    wf, others = result["workflow"], names(result)[1:]
    lines = [
        "",
        "### Per record",
        "",
        (
            "| record | beats | beatflow Se % | +P % | F1 | "
            + "".join(f"{LABELS[n]} F1 | " for n in others)
            + "V AUROC | S AUROC | N flagged % |"
        ),
        "|---|---|---|---|---|" + "---|" * (len(others) + 3),
    ]
    for record in result["records"]:
        e, d = wf["evaluation"][record], result["detectors"][record]
        per = e["per_label"]
        lines.append(
            f"| {record} | {e['n_true']} | {pct(e['sensitivity'])} | {pct(e['ppv'])} | {e['f1']:.4f} | "
            + "".join(f"{d[n]['f1']:.4f} | " for n in others)
            + f"{auc(per.get('V', {}).get('auroc'))} ({per.get('V', {}).get('n', 0)}) | "
            f"{auc(per.get('S', {}).get('auroc'))} ({per.get('S', {}).get('n', 0)}) | "
            f"{pct(e['normal_flagged'])} |"
        )
    return lines


def class_tables(result: dict) -> list[str]:
    """Markdown: the beat classes (EC57 VEB and SVEB), gross and per record, and the summed confusion table."""
    wf = result["workflow"]
    k = wf["cohort"].get("classes")
    if k is None:
        return []
    lines = [
        "",
        "### Beat classes (beatflow)",
        "",
        (
            "The shipped classifier was fitted on the MIT-BIH DS1 and svdb records of ../shared, so on them these "
            "figures are in database; its out-of-database figures: docs/classes.md. "
            "Counted as EC57 counts ventricular (VEB) and supraventricular (SVEB) ectopic beats: V +P leaves out "
            "detections that match reference F or Q beats, S +P those that match Q; gross figures sum over records "
            "before dividing, averages are over the records with such beats."
        ),
        "",
        "| class | reference beats | gross Se % | gross +P % | average Se % | average +P % |",
        "|---|---|---|---|---|---|",
    ]
    for label in CLASSES:
        c = k[label]
        lines.append(
            f"| {label} | {c['n']} | {pct(c['gross_se'])} | {pct(c['gross_ppv'])} | {pct(c['average_se'])} | "
            f"{pct(c['average_ppv'])} |"
        )
    lines += [
        "",
        (
            f"Reference N beats classed other than N: median over records "
            f"{pct(k['normal_misclassified_median'])} %, gross {pct(k['normal_misclassified_gross'])} %."
        ),
        "",
        "Confusion (rows: reference class, `-` = no reference beat; columns: beatflow's class, `-` = missed):",
        "",
        "| reference | " + " | ".join(k["confusion"]["N"]) + " |",
        "|---" * (len(k["confusion"]["N"]) + 1) + "|",
    ]
    for ref, row in k["confusion"].items():
        lines.append(f"| {ref} | " + " | ".join(str(v) for v in row.values()) + " |")
    lines += [
        "",
        "| record | V | V Se % | V +P % | S | S Se % | S +P % | N classed other % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for record in result["records"]:
        c = wf["evaluation"][record].get("classes")
        if c is None:
            continue
        v, s = c["V"], c["S"]
        lines.append(
            f"| {record} | {v['n']} | {pct(v['se'])} | {pct(v['ppv'])} | {s['n']} | {pct(s['se'])} | "
            f"{pct(s['ppv'])} | {pct(c['normal_misclassified'])} |"
        )
    return lines


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=[MITDB, SVDB],
        help="folders of WFDB records with .atr annotations, a section of the page each (default: ../shared/mitdb "
        "and ../shared/svdb)",
    )
    p.add_argument("--records", help="comma-separated record names (default: every record in --data)")
    p.add_argument("--detectors", help="comma-separated reference detectors beside beatflow (default: all)")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    p.add_argument("--json", type=Path)
    p.add_argument("--md", type=Path)
    p.add_argument(
        "--detectors-from",
        type=Path,
        metavar="JSON",
        help="take the reference detectors' figures "
        "from a JSON this script wrote on the same records (they do not depend on beatflow) instead of "
        "running them",
    )
    p.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="take beatflow's evaluation.json files from the "
        "results folder of a workflow run on these records instead of running the workflow (no timing)",
    )
    p.add_argument(
        "--render",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="only write the Markdown again from JSONs this script wrote (to --md, default docs/real_ecg.md)",
    )
    return p.parse_args(argv)


def workflow_run(a: argparse.Namespace, data: Path, records: list[str]) -> dict:
    """The workflow's figures: from ``--results`` where given, else a run on a sheet of these records."""
    if a.results:
        missing = [r for r in records if not (a.results / r / "evaluation.json").exists()]
        if missing:
            raise SystemExit(f"{a.results} has no evaluation.json for {missing}")
        return {
            "wall_s": None,
            "stages_s": {},
            "evaluation": {r: json.loads((a.results / r / "evaluation.json").read_text()) for r in records},
        }
    with tempfile.TemporaryDirectory() as tmp:
        sheet = Path(tmp) / "records.tsv"
        write_sheet(data, records, sheet)
        return run_backend(a.device, a.cores, str(sheet), [], None)


def detector_figures(a: argparse.Namespace, data: Path, records: list[str]) -> dict:
    """The detectors' figures per record, run here; with ``--detectors-from``, the reference detectors' from
    there and beatflow's (whose code may have changed since) run here."""
    if not a.detectors_from:
        return references(data, records, chosen(a.detectors))
    earlier = json.loads(a.detectors_from.read_text())
    missing = sorted(set(records) - set(earlier["detectors"]))
    if missing:
        raise SystemExit(f"{a.detectors_from} has no detector figures for {missing}")
    ours = references(data, records, ("beatflow",))
    return {r: {**ours[r], **{n: v for n, v in earlier["detectors"][r].items() if n != "beatflow"}} for r in records}


def database_result(a: argparse.Namespace, data: Path, json_path: Path) -> dict:
    """The figures of the records of one folder (``--records`` of them, or all), written to ``json_path``."""
    from beatflow.evaluate import cohort_figures

    data = data.resolve()
    if not data.is_dir():
        raise SystemExit(
            f"{data} not found: point --data at a folder of WFDB records (e.g. from wfdb.dl_database('mitdb', 'mitdb'))"
        )
    records = records_in(data, a.records.split(",") if a.records else None)
    run = workflow_run(a, data, records)
    evaluations = {r: run["evaluation"][r] for r in records}
    detectors = detector_figures(a, data, records)
    result = {
        "date": today(),
        "data": str(data),
        "records": records,
        "cores": a.cores,
        "machine": machine(),
        "json": relative(json_path),
        "workflow": {
            "wall_s": run["wall_s"],
            "stages_s": run["stages_s"],
            "evaluation": evaluations,
            "cohort": cohort_figures(evaluations),
        },
        "detectors": detectors,
        "gross": {n: gross(detectors, n) for n in next(iter(detectors.values()))},
        "detectors_from": str(a.detectors_from) if a.detectors_from else None,
        "results_from": str(a.results) if a.results else None,
    }
    write_json(json_path, result, indent=1)
    return result


def main(argv=None) -> None:
    a = parse_args(argv)
    if a.render:
        results = [json.loads(p.read_text()) for p in a.render]
        (a.md or ROOT / "docs" / "real_ecg.md").write_text(markdown(results))
        return
    if len(a.data) > 1 and (a.json or a.results or a.detectors_from):
        raise SystemExit("--json, --results and --detectors-from take one --data folder")
    temporary = a.records is not None
    out_dir = Path(tempfile.mkdtemp()) if temporary else RESULTS
    results = [
        database_result(a, data, a.json or out_dir / f"real-ecg-{data.resolve().name}-{today()}.json")
        for data in a.data
    ]
    md_path = a.md or (out_dir / "real_ecg.md" if temporary else ROOT / "docs" / "real_ecg.md")
    md_path.write_text(markdown(results))
    print(md_path.read_text())
    print(f"wrote {', '.join(r['json'] for r in results)} and {md_path}")


if __name__ == "__main__":
    main()

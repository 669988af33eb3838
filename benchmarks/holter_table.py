"""The Holter summary against the annotations, as Markdown: each record's agreement and the gross figures, from
the ``holter`` section of the workflow's ``evaluation.json`` files (WFDB truth).

    python -m benchmarks.holter_table benchmarks/results/mitdb-h200-20261202-s30.json --backend cpu
    python -m benchmarks.holter_table results/                    # a run's results folder

The first form reads a :mod:`benchmarks.run_workflow` report (its per-backend ``evaluation``), the second every
``*/evaluation.json`` below a folder."""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

from beatflow.holter import gross
from benchmarks.common import pct

_pct = partial(pct, digits=1)


def evaluations(source: Path, backend: str) -> dict[str, dict]:
    if source.is_dir():
        return {p.parent.name: json.loads(p.read_text()) for p in sorted(source.glob("*/evaluation.json"))}
    return json.loads(source.read_text())["evaluation"][backend]


def _found(part: dict) -> str:
    return f"{part['reference']} / {part['output']}"


def markdown(agreements: dict[str, dict]) -> str:
    rows = [
        "| record | mean HR error (bpm) | minutes within 2 bpm % | V runs ref / out | V runs Se / +P % | "
        "V couplets Se / +P % | S runs ref / out | pauses ref / out | AF s ref / out | AF duration Se / +P % | "
        "SDNN error % | rMSSD error % |",
        "|" + "---|" * 12,
    ]
    for record, a in sorted(agreements.items()):
        v, s, af = a["ventricular"], a["supraventricular"], a["af"]
        rows.append(
            f"| {record} | {a['heart_rate']['mean_bpm_error']} | {_pct(a['heart_rate']['minutes_within_share'])} | "
            f"{_found(v['runs'])} | {_pct(v['runs']['se'])} / {_pct(v['runs']['ppv'])} | "
            f"{_pct(v['couplets']['se'])} / {_pct(v['couplets']['ppv'])} | {_found(s['runs'])} | "
            f"{_found(a['pauses'])} | {af['reference_s']:.0f} / {af['output_s']:.0f} | "
            f"{_pct(af['duration_se'])} / {_pct(af['duration_ppv'])} | "
            f"{_pct(a['hrv']['sdnn_ms']['relative_error'])} | {_pct(a['hrv']['rmssd_ms']['relative_error'])} |"
        )
    g = gross(list(agreements.values()))
    v, s, af = g["ventricular"], g["supraventricular"], g["af"]
    lines = [
        "Gross (counts summed over records before dividing):",
        "",
        f"- V runs Se / +P {_pct(v['runs']['se'])} / {_pct(v['runs']['ppv'])} % ({v['runs']['reference']} "
        f"reference, {v['runs']['output']} output); V couplets {_pct(v['couplets']['se'])} / "
        f"{_pct(v['couplets']['ppv'])} %",
        f"- S runs Se / +P {_pct(s['runs']['se'])} / {_pct(s['runs']['ppv'])} %; S couplets "
        f"{_pct(s['couplets']['se'])} / {_pct(s['couplets']['ppv'])} %",
        f"- AF episodes Se / +P {_pct(af['se'])} / {_pct(af['ppv'])} %; AF duration Se / +P "
        f"{_pct(af['duration_se'])} / {_pct(af['duration_ppv'])} %; false AF in records without AF "
        f"{af['false_s_without_reference_af']:.0f} s",
        f"- pauses: {g['pauses']['reference']} reference, {g['pauses']['output']} output, Se / +P "
        f"{_pct(g['pauses']['se'])} / {_pct(g['pauses']['ppv'])} %",
        f"- heart rate: largest mean error {g['mean_bpm_error_max_abs']} bpm; minutes within 2 bpm "
        f"{_pct(g['minutes_within_share'])} %",
        "- HRV, median relative error: "
        + ", ".join(f"{k} {_pct(e)} %" for k, e in g["hrv_median_abs_relative_error"].items()),
    ]
    return "\n".join(rows + [""] + lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", type=Path, help="a benchmarks.run_workflow report (JSON) or a results folder")
    p.add_argument("--backend", default="cpu", help="which backend's evaluations, in a benchmarks.run_workflow report")
    args = p.parse_args(argv)
    found = {r: e["holter"]["agreement"] for r, e in evaluations(args.source, args.backend).items() if "holter" in e}
    print(markdown(found), end="")


if __name__ == "__main__":
    main()

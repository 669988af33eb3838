"""How alike two backends' beat classes are: each record's ``scores.parquet`` of one run (``A``, e.g. the GPU
backend) matched beat by beat to another's (``B``, the CPU backend), and the score rule's seconds per record.

    python -m benchmarks.backend_agreement KEPT/gpu KEPT/cpu --out benchmarks/results/backend-agreement-....json \
        [--workflow-json benchmarks/results/mitdb-h200-....json]

``KEPT/gpu`` and ``KEPT/cpu`` are results folders (``run_workflow --keep-results KEPT``: a ``{record}/`` folder
per record). Beats are matched by R peak: the same sample first, then the nearest peak within ``--tolerance-s``
(each beat matched once). The report gives, over all records and per record, the beats of each run, how many
matched, the share of matched beats with the same ``class`` (overall and per class of ``A``, of ``B`` and of
either), the confusion matrix (``A`` class → ``B`` class → beats), and the largest ``class_p`` difference among
beats of the same class. With ``--workflow-json`` (``run_workflow``'s report of the same runs) it adds the score
rule's seconds per record on each backend (``stages_s``, from Snakemake's ``benchmark:`` files).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path


def match(a, b, tolerance: int):
    """Index pairs ``(i, j)`` of beats in ``a`` and ``b`` (frames sorted by ``peak``): equal peaks first, then
    the nearest unmatched peak within ``tolerance`` samples."""
    import numpy as np

    pa, pb = a.peak.to_numpy(np.int64), b.peak.to_numpy(np.int64)
    common, ia, ib = np.intersect1d(pa, pb, return_indices=True)
    pairs = list(zip(ia.tolist(), ib.tolist(), strict=True))
    if tolerance > 0:
        free_a = np.setdiff1d(np.arange(len(pa)), ia)
        free_b = np.setdiff1d(np.arange(len(pb)), ib)
        taken: set[int] = set()
        for i in free_a:
            if len(free_b) == 0:
                break
            k = np.searchsorted(pb[free_b], pa[i])
            best = None
            for c in (k - 1, k):
                if 0 <= c < len(free_b) and free_b[c] not in taken:
                    d = abs(int(pb[free_b[c]]) - int(pa[i]))
                    if d <= tolerance and (best is None or d < best[0]):
                        best = (d, int(free_b[c]))
            if best is not None:
                taken.add(best[1])
                pairs.append((int(i), best[1]))
    return pairs


def compare(a, b, tolerance: int) -> dict:
    """The class agreement of two runs' beats of one record (or, from :func:`merge`, of many)."""
    pairs = match(a, b, tolerance)
    ca, cb = a["class"].to_numpy(), b["class"].to_numpy()
    pa, pb = a["class_p"].to_numpy(), b["class_p"].to_numpy()
    confusion: Counter = Counter()
    dp = 0.0
    for i, j in pairs:
        confusion[(str(ca[i]), str(cb[j]))] += 1
        if ca[i] == cb[j] and pa[i] == pa[i] and pb[j] == pb[j]:  # NaN: no class_p
            dp = max(dp, abs(float(pa[i]) - float(pb[j])))
    return summary(len(a), len(b), confusion, dp, sum(int(a.peak.iloc[i] == b.peak.iloc[j]) for i, j in pairs))


def summary(n_a: int, n_b: int, confusion: Counter, dp: float, same_peak: int) -> dict:
    matched = sum(confusion.values())
    same = sum(n for (x, y), n in confusion.items() if x == y)
    classes = sorted({c for pair in confusion for c in pair})

    def share(keep) -> dict:
        out = {}
        for c in classes:
            total = sum(n for pair, n in confusion.items() if keep(pair, c))
            agree = confusion.get((c, c), 0)
            out[c] = {"beats": total, "same": agree, "share": agree / total if total else None}
        return out

    return {
        "beats_a": n_a,
        "beats_b": n_b,
        "matched": matched,
        "matched_same_peak": same_peak,
        "unmatched_a": n_a - matched,
        "unmatched_b": n_b - matched,
        "same_class": same,
        "share_same_class": same / matched if matched else None,
        "per_class_of_a": share(lambda pair, c: pair[0] == c),
        "per_class_of_b": share(lambda pair, c: pair[1] == c),
        "per_class_either": share(lambda pair, c: c in pair),
        "confusion_a_to_b": {x: {y: n for (x2, y), n in sorted(confusion.items()) if x2 == x} for x in classes},
        "max_class_p_diff_same_class": dp,
        "_confusion": confusion,
    }


def read_scores(path: Path):
    import pandas as pd
    import pyarrow.parquet as pq

    columns = [c for c in ("peak", "class", "class_p") if c in pq.read_schema(path).names]
    frame = pd.read_parquet(path, columns=columns)
    if "class_p" not in frame:  # written before the classifier gave class_p
        frame["class_p"] = float("nan")
    return frame.sort_values("peak", kind="stable").reset_index(drop=True)


def fs_of(folder: Path) -> float | None:
    """The record's sampling rate from its ``signal.parquet`` metadata, where kept."""
    import pyarrow.parquet as pq

    path = folder / "signal.parquet"
    if not path.exists():
        return None
    return float(pq.read_schema(path).metadata[b"fs"])


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", type=Path, help="results folder of run A (a {record}/scores.parquet per record)")
    p.add_argument("b", type=Path, help="results folder of run B")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tolerance-s", type=float, default=0.05, help="nearest-peak match within this (s)")
    p.add_argument("--fs", type=float, default=360.0, help="sampling rate where a record has no signal.parquet")
    p.add_argument("--workflow-json", type=Path, help="run_workflow's report: score rule seconds per record")
    p.add_argument("--names", nargs=2, default=None, help="names of A and B in the report (default: folder names)")
    return p.parse_args(argv)


def score_rule_seconds(report: dict) -> dict:
    """The score rule's seconds per backend (``score_rule_s``: total, mean, range and per record) and the
    workflow's wall time, from a ``benchmarks.run_workflow`` report."""
    seconds = {  # one record: run_workflow writes its stages with its name beside them
        backend: {stages["name"]: stages["score"]}
        if "name" in stages
        else {r: s["score"] for r, s in stages.items() if isinstance(s, dict) and "score" in s}
        for backend, stages in report.get("stages_s", {}).items()
    }
    per_backend = {
        backend: {
            "records": len(s),
            "total": sum(s.values()),
            "mean_per_record": sum(s.values()) / len(s) if s else None,
            "min": min(s.values(), default=None),
            "max": max(s.values(), default=None),
            "per_record": s,
        }
        for backend, s in seconds.items()
    }
    return {"score_rule_s": per_backend, "workflow_wall_s": report.get("workflow_wall_s")}


def main(argv=None) -> None:
    a = parse_args(argv)
    names = a.names or [a.a.name, a.b.name]
    records = sorted(
        p.parent.name for p in a.a.glob("*/scores.parquet") if (a.b / p.parent.name / "scores.parquet").exists()
    )
    only = sorted(
        {p.parent.name for p in a.a.glob("*/scores.parquet")} ^ {p.parent.name for p in a.b.glob("*/scores.parquet")}
    )
    per_record, total, dp, n_a, n_b, same_peak = {}, Counter(), 0.0, 0, 0, 0
    for record in records:
        fs = fs_of(a.a / record) or a.fs
        r = compare(
            read_scores(a.a / record / "scores.parquet"),
            read_scores(a.b / record / "scores.parquet"),
            round(a.tolerance_s * fs),
        )
        total.update(r.pop("_confusion"))
        dp = max(dp, r["max_class_p_diff_same_class"])
        n_a, n_b, same_peak = n_a + r["beats_a"], n_b + r["beats_b"], same_peak + r["matched_same_peak"]
        per_record[record] = {k: r[k] for k in r if not k.startswith("per_class")}
    overall = summary(n_a, n_b, total, dp, same_peak)
    overall.pop("_confusion")
    out = {
        "a": names[0],
        "b": names[1],
        "tolerance_s": a.tolerance_s,
        "records": len(records),
        "records_in_one_run_only": only,
        "overall": overall,
        "per_record": per_record,
    }
    if a.workflow_json is not None:
        out.update(score_rule_seconds(json.loads(a.workflow_json.read_text())))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1) + "\n")
    o = out["overall"]
    print(
        json.dumps(
            {
                "records": len(records),
                "beats": [o["beats_a"], o["beats_b"]],
                "matched": o["matched"],
                "share_same_class": o["share_same_class"],
                "per_class_either": {c: v["share"] for c, v in o["per_class_either"].items()},
                "score_rule_mean_s": {k: v["mean_per_record"] for k, v in out.get("score_rule_s", {}).items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

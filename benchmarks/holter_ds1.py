"""The Holter summary on the 22 DS1 MIT-BIH records, from the *reference* beats: isolates the summary's and the
AF detector's quality from beat detection and classification.

    python -m benchmarks.holter_ds1                   # benchmarks/results/holter-ds1-<date>.json and a table
    python -m benchmarks.holter_ds1 --records 201,203

For each record the reference summary (:func:`beatflow.holter.reference.reference_summary`: annotated beats,
AAMI classes, AF from the rhythm annotations) is compared (:func:`beatflow.holter.agreement.agreement`) with
summaries computed from the same beat times with AF *detected* (:func:`beatflow.holter.af.detect_af`), in
variants of the beat classes the detector sees:

- ``reference``: the annotated AAMI classes (what beatflow's summary does with perfect classes);
- ``prematurity``: every beat N except a premature one (RR < 0.85 × the median of the 8 before it), S — no
  ventricular class at all, and many AF beats called S, as a prematurity-based classifier would;
- ``V-80%``: the annotated classes with a random fifth of the V beats called N (seeded): a V classifier of
  80 % sensitivity;
- ``V+prematurity``: the annotated V and F beats, every other beat N or S by prematurity as above (a
  morphology classifier for V with a prematurity rule for S, the realistic case);
- ``no-classes``: every beat N (the paper's detector alone, its median filter the only ectopic handling);
- ``reference-S-out``: the annotated classes, S beats' intervals also left out of the AF series.

And an ablation of the AF detector's mechanisms (annotated classes for the summary): the RR stages alone (no
classes, no episode gates; the two scales and the edge placement are always on), then adding the V/F interval
removal, the 10 s minimum episode and the pNN50 gate in turn.

And a section from beatflow's *detected* beats (``detect.segment.detect_peaks``, default parameters, CPU, both
leads, as the segment rule runs it): each detection matched one to one within 150 ms to a reference beat takes
that beat's class (a perfect classifier), an unmatched one is N (the pessimistic case: a false detection the
classifier takes for a normal beat) — the summary's figures against the reference summary with beat detection
as the only source of error; the signal quality, the pause check and the P-wave check read the leads as
``signal.parquet`` would hold them.

With ``--results DIR`` (a workflow run's ``results`` folder), also the summaries beatflow itself writes:
:func:`beatflow.holter.summarise` on each record's ``scores.parquet`` (detected beats and beatflow's classes)
and ``signal.parquet``, against the reference summary — end to end (the reference's ventricular
flutter/fibrillation episodes left out of both, as EC57 does).

``--af-events`` runs only the AF events section (any WFDB folder: ``--data ../shared/svdb`` for false AF in
ectopy-rich sinus rhythm): per record, from the reference beats with the signal's P-wave evidence, for the
classes ``reference`` and ``V+prematurity``, AF duration Se / +P, episodes found / true (by overlap) and each
paroxysm edge's error in beats (output edge − reference edge, counted in reference beats; edges with 10 s of
non-AF rhythm outside), the reference beats inside the output AF by class (``beats_in_af``: svdb labels beats
and no rhythm, so annotated S beats inside output AF are premature atrial beats the annotators saw, evidence of
sinus rhythm with ectopy) and the AF time found in records without reference AF.

    python -m benchmarks.holter_ds1 --af-events --json benchmarks/results/holter-af-ds1-<date>.json
    python -m benchmarks.holter_ds1 --af-events --data ../shared/svdb
    python -m benchmarks.holter_ds1 --af-sensitivity ../shared/mitdb ../shared/svdb --json …

``--af-sensitivity`` repeats that section over whole WFDB folders with the detector's tuned constants set
otherwise, one at a time (:data:`SENSITIVITY`), and gives each setting's gross and per-record AF figures.

Every variant runs with the P-wave check (both leads, read with wfdb) and without it.
Only the first variant's full agreement is printed per record; the others' AF figures are in the JSON and the
last table.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import numpy as np

from beatflow.holter.af import detect_af
from beatflow.holter.agreement import agreement, gross
from beatflow.holter.reference import read_reference, summary_of_reference
from beatflow.holter.summary import analysable, summary_from_beats
from benchmarks.common import MITDB, RESULTS, stage_params, today, write_json
from benchmarks.common import pct as _pct

pct = partial(_pct, digits=1)

PREMATURE = 0.85


def prematurity_classes(t: np.ndarray) -> np.ndarray:
    """N, or S for a beat whose RR is < PREMATURE × the median of the 8 RR intervals before it."""
    rr = np.diff(t, prepend=np.nan)
    c = np.full(len(t), "N", dtype="<U1")
    for i in range(9, len(t)):
        if rr[i] < PREMATURE * np.median(rr[i - 8 : i]):
            c[i] = "S"
    return c


def variants(ref: dict) -> dict:
    t, c = ref["time_s"], ref["classes"]
    v80 = c.copy()
    v = np.flatnonzero(c == "V")
    v80[v[np.random.default_rng(0).random(len(v)) > 0.8]] = "N"
    return {
        "reference": (c, ("V", "F")),
        "V-80%": (v80, ("V", "F")),
        "prematurity": (prematurity_classes(t), ("V", "F")),
        "V+prematurity": (np.where(np.isin(c, ["V", "F"]), c, prematurity_classes(t)), ("V", "F")),
        "no-classes": (np.full(len(t), "N"), ()),
        "reference-S-out": (c, ("V", "F", "S")),
    }


ABLATION = {  # name: (use the annotated V/F classes, min_episode_s, pnn50_min, P-wave check)
    "paper": (False, 0.0, 0.0, False),
    "+V/F removal": (True, 0.0, 0.0, False),
    "+V/F, 10 s": (True, 10.0, 0.0, False),
    "+V/F, pNN50": (True, 0.0, 0.5, False),
    "+V/F, 10 s, pNN50": (True, 10.0, 0.5, False),
    "+V/F, 10 s, pNN50, P (default)": (True, 10.0, 0.5, True),
    "paper + P-wave only": (False, 0.0, 0.0, True),
}


def lead_loader(data: Path, rec: str):
    """A callable returning ``(lead name → array, fs)`` of the record's leads, read once with wfdb."""

    def load():
        import wfdb

        r = wfdb.rdrecord(str(data / rec))
        return {name: r.p_signal[:, k] for k, name in enumerate(r.sig_name)}, float(r.fs)

    cache: list = []
    return lambda: cache[0] if cache else (cache.append(load()) or cache[0])


def ablation(records: list[str], data: Path) -> dict:
    out = {}
    refs = {rec: read_reference(data / f"{rec}.atr") for rec in records}
    leads = {rec: lead_loader(data, rec) for rec in records}
    for name, (use_classes, min_s, pnn50, p_wave) in ABLATION.items():
        agrs = []
        for rec, ref in refs.items():
            t, c = ref["time_s"], ref["classes"]
            valid = analysable(t, ref["vf_s"])
            episodes = detect_af(
                t,
                c if use_classes else None,
                valid,
                min_episode_s=min_s,
                pnn50_min=pnn50,
                signal=leads[rec] if p_wave else None,
            )
            s_out = summary_from_beats(rec, t, c, ref["duration_s"], excluded=ref["vf_s"], af_episodes=episodes)
            s_ref = summary_from_beats(rec, t, c, ref["duration_s"], excluded=ref["vf_s"], af_episodes=ref["af_s"])
            agrs.append(agreement(s_out, s_ref))
        out[name] = gross(agrs)["af"]
    return out


def detected_section(records: list[str], data: Path) -> dict:
    """Agreement of the summary from beatflow's detected beats (classes from the matched reference beats,
    unmatched ones N) with the reference summary, per record and gross."""
    from beatflow.backend import select_backend
    from beatflow.detect.segment import detect_peaks
    from beatflow.evaluate import TOLERANCE_S, match
    from beatflow.io.physio import read_wfdb

    per, agrs = {}, []
    backend = select_backend("cpu")
    for rec in records:
        ref = read_reference(data / f"{rec}.atr")
        signals, leads, fs = read_wfdb(data / rec, None)
        first = signals[leads[0]]
        second = signals[leads[1]] if len(leads) > 1 else None
        peaks = np.unique(
            np.asarray(detect_peaks(first, stage_params()[0].in_samples(fs), backend, second=second), np.int64)
        )
        ref_samples = np.round(ref["time_s"] * fs).astype(np.int64)
        ti, di = match(ref_samples, peaks, TOLERANCE_S * fs)
        classes = np.full(len(peaks), "N", dtype="<U1")
        classes[di] = ref["classes"][ti]
        t = peaks / fs
        summ = summary_from_beats(
            rec, t, classes, ref["duration_s"], excluded=ref["vf_s"], signal=lambda s=signals, f=fs: (s, f)
        )
        reference = summary_of_reference(ref, rec)
        agr = agreement(summ, reference)
        agrs.append(agr)
        per[rec] = {
            "detected": int(len(peaks)),
            "matched": int(len(ti)),
            "reference_beats": int(len(ref_samples)),
            "artefact": summ["artefact"],
            "pauses": summ["pauses"],
            "agreement": agr,
        }
        print(rec, "detected", len(peaks), "matched", len(ti), "of", len(ref_samples), flush=True)
    return {"records": per, "gross": gross(agrs)}


def workflow_section(records: list[str], data: Path, results: Path) -> dict:
    """Agreement of :func:`beatflow.holter.summarise` on a workflow run's outputs with the reference summary."""
    from beatflow.holter import summarise

    per, agrs = {}, []
    for rec in records:
        scores, signal = results / rec / "scores.parquet", results / rec / "signal.parquet"
        if not (scores.exists() and signal.exists()):
            continue
        ref = read_reference(data / f"{rec}.atr")
        t0 = time.perf_counter()
        out = summarise(rec, scores, signal, excluded=ref["vf_s"])  # VF left out, as EC57 and the reference do
        elapsed = time.perf_counter() - t0
        reference = summary_of_reference(ref, rec)
        agr = agreement(out, reference)
        agrs.append(agr)
        per[rec] = {
            "seconds": round(elapsed, 4),
            "beats": out["beats"],
            "reference_beats": reference["beats"],
            "af_episodes": out["af"]["episodes"],
            "notes": out["notes"],
            "agreement": agr,
        }
    return {"results": str(results), "records": per, "gross": gross(agrs) if agrs else None}


EVENT_VARIANTS = ("reference", "V+prematurity")
EDGE_CONTEXT_S = 10.0


def edge_errors(t: np.ndarray, output: list, reference: list, duration_s: float) -> list[int]:
    """Each paroxysm edge's error in beats: the signed count of beats (of ``t``) from a reference episode's edge to
    the nearest output edge of the same kind (start or end) among the output episodes that overlap it. Only edges
    with :data:`EDGE_CONTEXT_S` or more of non-AF reference rhythm on their outer side count (not the record's
    ends, nor a brief interruption of AF by a few ventricular beats), and reference episodes that an output one
    overlaps."""
    errors = []
    bounds = [0.0, *[x for se in reference for x in se], duration_s]
    for k, (s, e) in enumerate(reference):
        hits = [(os_, oe) for os_, oe in output if min(oe, e) > max(os_, s)]
        if not hits:
            continue
        for edge, outside, candidates in (
            (s, s - bounds[2 * k], [h[0] for h in hits]),
            (e, bounds[2 * k + 3] - e, [h[1] for h in hits]),
        ):
            if outside < EDGE_CONTEXT_S:
                continue
            nearest = min(candidates, key=lambda x: abs(x - edge))
            errors.append(int(np.searchsorted(t, nearest)) - int(np.searchsorted(t, edge)))
    return errors


def af_events(records: list[str], data: Path, detect=detect_af) -> dict:
    """The AF events section (module docstring), ``detect`` standing for :func:`detect_af` (same signature)."""
    from beatflow.holter.agreement import af_agreement
    from beatflow.holter.summary import merge_intervals

    per: dict = {name: {} for name in EVENT_VARIANTS}
    for rec in records:
        ref = read_reference(data / f"{rec}.atr")
        t, lead = ref["time_s"], lead_loader(data, rec)
        reference = merge_intervals(ref["af_s"])
        for name in EVENT_VARIANTS:
            classes, ectopic = variants(ref)[name]
            t0 = time.perf_counter()
            out = merge_intervals(detect(t, classes, analysable(t, ref["vf_s"]), ectopic=ectopic, signal=lead))
            elapsed = time.perf_counter() - t0
            af = af_agreement(
                {"episodes": [{"start_s": a, "end_s": b} for a, b in out], "burden": None},
                {"episodes": [{"start_s": a, "end_s": b} for a, b in reference], "burden": None},
            )
            af["edge_errors_beats"] = edge_errors(t, out, reference, ref["duration_s"])
            inside = np.zeros(len(t), dtype=bool)
            for a, b in out:
                inside |= (t >= a) & (t <= b)
            af["beats_in_af"] = {k: int((inside & (ref["classes"] == k)).sum()) for k in ("N", "S", "V")}
            af["episodes"] = [[round(a, 2), round(b, 2)] for a, b in out]
            af["seconds"] = round(elapsed, 3)
            per[name][rec] = af
        print(rec, {n: (per[n][rec]["reference_s"], per[n][rec]["output_s"]) for n in EVENT_VARIANTS}, flush=True)
    out = {"records": per, "gross": {}}
    for name, recs in per.items():
        edges = [abs(x) for a in recs.values() for x in a["edge_errors_beats"]]
        ov, t_r, t_o = (sum(a[k] for a in recs.values()) for k in ("overlap_s", "reference_s", "output_s"))
        counts = {k: sum(a[k] for a in recs.values()) for k in ("reference", "output", "found", "true")}
        out["gross"][name] = {
            **counts,
            "reference_s": round(t_r, 2),
            "output_s": round(t_o, 2),
            "duration_se": ov / t_r if t_r else None,
            "duration_ppv": ov / t_o if t_o else None,
            "se": counts["found"] / counts["reference"] if counts["reference"] else None,
            "ppv": counts["true"] / counts["output"] if counts["output"] else None,
            "false_s_without_reference_af": round(sum(a["output_s"] for a in recs.values() if not a["reference_s"]), 2),
            "edge_error_median_beats": float(np.median(edges)) if edges else None,
            "edges_within_3_beats": sum(x <= 3 for x in edges) / len(edges) if edges else None,
        }
    return out


SENSITIVITY = {  # name: the AF detector's constants set for the run (the default first)
    "default": {},
    "ALPHA_SHORT 0.02 (one scale)": {"ALPHA_SHORT": 0.02},
    "ALPHA_SHORT 0.2": {"ALPHA_SHORT": 0.2},
    "EDGE_BEATS 20": {"EDGE_BEATS": 20},
    "EDGE_BEATS 60": {"EDGE_BEATS": 60},
    "P_TRIM_BEATS 30 (landed)": {"P_TRIM_BEATS": 30},
    "no NN gate": {"nn_irregular": lambda *args: True},
}


AF_FIGURES = (
    "reference_s",
    "output_s",
    "duration_se",
    "duration_ppv",
    "found",
    "reference",
    "true",
    "output",
    "edge_errors_beats",
)  # each AF record's figures that af_sensitivity keeps


def _af_section_figures(sec: dict) -> dict:
    """An AF events section (:func:`af_events`) cut to its gross figures and the :data:`AF_FIGURES` of each
    record with AF in the reference or the output."""
    return {
        "gross": sec["gross"],
        "records": {
            variant: {
                rec: {k: a[k] for k in AF_FIGURES} for rec, a in recs.items() if a["reference_s"] or a["output_s"]
            }
            for variant, recs in sec["records"].items()
        },
    }


def af_sensitivity(folders: dict[str, Path]) -> dict:
    """The AF events section's gross figures and each AF record's, per WFDB folder, with each of
    :data:`SENSITIVITY`'s settings of the detector's constants (restored after each run): what each tuned
    constant buys on the record it was tuned on (MIT-BIH 201) and on the others."""
    import contextlib
    import io

    from beatflow.holter import af as af_module

    out = {}
    for name, overrides in SENSITIVITY.items():
        saved = {k: getattr(af_module, k) for k in overrides}
        try:
            for k, v in overrides.items():
                setattr(af_module, k, v)
            runs = {}
            for db, folder in folders.items():
                with contextlib.redirect_stdout(io.StringIO()):
                    runs[db] = af_events(sorted(x.stem for x in folder.glob("*.atr")), folder)
        finally:
            for k, v in saved.items():
                setattr(af_module, k, v)
        out[name] = {db: _af_section_figures(sec) for db, sec in runs.items()}
        print(
            name,
            {
                db: {
                    v: (g["duration_se"], g["duration_ppv"], g["false_s_without_reference_af"])
                    for v, g in r["gross"].items()
                }
                for db, r in out[name].items()
            },
            flush=True,
        )
    return out


def af_events_table(section: dict) -> str:
    lines = [
        f"{'variant':>14} {'rec':>4} {'refAF_s':>8} {'outAF_s':>8} {'dSe':>6} {'d+P':>6} {'ep':>9} {'N/S/V in AF':>14} "
        "edges (beats)"
    ]
    for name, recs in section["records"].items():
        for rec, a in recs.items():
            if a["reference_s"] or a["output_s"]:
                lines.append(
                    f"{name:>14} {rec:>4} {a['reference_s']:8.1f} {a['output_s']:8.1f} {pct(a['duration_se']):>6} "
                    f"{pct(a['duration_ppv']):>6} {a['found']:>2}/{a['reference']:<2}{a['true']:>2}/{a['output']:<2} "
                    f"{'/'.join(str(v) for v in a['beats_in_af'].values()):>14} {a['edge_errors_beats']}"
                )
    for name, g in section["gross"].items():
        lines.append(
            f"gross {name}: AF duration Se/+P {pct(g['duration_se'])}/{pct(g['duration_ppv'])} %, episodes Se/+P "
            f"{pct(g['se'])}/{pct(g['ppv'])} % ({g['found']}/{g['reference']}, {g['true']}/{g['output']}), false AF "
            f"in records without AF {g['false_s_without_reference_af']:.1f} s, |edge error| median "
            f"{g['edge_error_median_beats']} beats, within 3 beats {pct(g['edges_within_3_beats'])} %"
        )
    return "\n".join(lines)


def run(records: list[str], data: Path) -> dict:
    out = {"records": {}, "variants": {}}
    by_variant: dict[str, list] = {}
    for rec in records:
        ref = read_reference(data / f"{rec}.atr")
        lead = lead_loader(data, rec)
        t0 = time.perf_counter()
        reference = summary_of_reference(ref, rec)
        t_ref = time.perf_counter() - t0
        entry = {"reference_summary_s": round(t_ref, 4)}
        for name, (classes, ectopic) in variants(ref).items():
            for p_wave in (True, False):
                key = name if p_wave else f"{name} (no P-wave)"
                t0 = time.perf_counter()
                valid = analysable(ref["time_s"], ref["vf_s"])
                episodes = detect_af(ref["time_s"], classes, valid, ectopic=ectopic, signal=lead if p_wave else None)
                # the summary itself always takes the annotated classes: only the AF detector's input varies
                summ = summary_from_beats(
                    rec, ref["time_s"], ref["classes"], ref["duration_s"], excluded=ref["vf_s"], af_episodes=episodes
                )
                elapsed = time.perf_counter() - t0
                agr = agreement(summ, reference)
                by_variant.setdefault(key, []).append(agr)
                entry[key] = {"seconds": round(elapsed, 4), "af": agr["af"], "af_episodes": summ["af"]["episodes"]}
                if key == "reference":
                    entry[key]["agreement"] = agr
        entry["reference_af_episodes"] = reference["af"]["episodes"]
        out["records"][rec] = entry
    for name, agrs in by_variant.items():
        out["variants"][name] = gross(agrs)
    out["ablation"] = ablation(records, data)
    out["detected"] = detected_section(records, data)
    return out


HEADER = (
    f"{'rec':>4} {'refAF_s':>8} {'outAF_s':>8} {'false_s':>8} {'dSe':>6} {'d+P':>6} {'epSe':>6} {'ep+P':>6}"
    f" {'HRerr':>6} {'min%':>6} {'Vrun':>9} {'Vcoup':>9} {'paus':>7} {'SDNN%':>6} {'rMSSD%':>6}"
)


def table_rows(records: dict, header: bool = True) -> str:
    lines = [HEADER] if header else []
    for rec, e in records.items():
        a = e["agreement"]
        af = a["af"]
        vr, vc = a["ventricular"]["runs"], a["ventricular"]["couplets"]
        h = a["hrv"]

        def rel(k):
            return "—" if h[k]["relative_error"] is None else f"{100 * h[k]['relative_error']:.1f}"

        err = a["heart_rate"]["mean_bpm_error"]
        lines.append(
            f"{rec:>4} {af['reference_s']:8.1f} {af['output_s']:8.1f} {af['false_s']:8.1f} "
            f"{pct(af['duration_se']):>6} {pct(af['duration_ppv']):>6} {pct(af['se']):>6} {pct(af['ppv']):>6} "
            f"{'—' if err is None else f'{err:.2f}':>6} {pct(a['heart_rate']['minutes_within_share']):>6} "
            f"{vr['found']:>4}/{vr['reference']:<4} {vc['found']:>4}/{vc['reference']:<4} "
            f"{a['pauses']['output']:>3}/{a['pauses']['reference']:<3} {rel('sdnn_ms'):>6} {rel('rmssd_ms'):>6}"
        )
    return "\n".join(lines)


def table(result: dict) -> str:
    lines = ["AF from reference beats, classes 'reference' (AF duration Se/+P %, seconds)"]
    lines.append(table_rows({rec: {"agreement": e["reference"]["agreement"]} for rec, e in result["records"].items()}))
    lines.append("")
    lines.append(
        f"{'variant':>26} {'refAF_s':>8} {'outAF_s':>8} {'dSe':>6} {'d+P':>6} {'epSe':>6} {'ep+P':>6} "
        f"{'false_s(no-AF recs)':>20}"
    )
    for name, g in result["variants"].items():
        af = g["af"]
        lines.append(
            f"{name:>26} {af['reference_s']:8.1f} {af['output_s']:8.1f} {pct(af['duration_se']):>6} "
            f"{pct(af['duration_ppv']):>6} {pct(af['se']):>6} {pct(af['ppv']):>6} "
            f"{af['false_s_without_reference_af']:20.1f}"
        )
    lines.append("")
    lines.append(
        f"{'AF ablation':>32} {'outAF_s':>8} {'dSe':>6} {'d+P':>6} {'epSe':>6} {'ep+P':>6} {'false_s(no-AF recs)':>20}"
    )
    for name, af in result["ablation"].items():
        lines.append(
            f"{name:>32} {af['output_s']:8.1f} {pct(af['duration_se']):>6} {pct(af['duration_ppv']):>6} "
            f"{pct(af['se']):>6} {pct(af['ppv']):>6} {af['false_s_without_reference_af']:20.1f}"
        )
    lines.append("")
    lines.append("From beatflow's detected beats (classes of the matched reference beats, unmatched N)")
    lines += gross_lines(result["detected"])
    if result.get("workflow") and result["workflow"]["gross"]:
        lines.append("")
        lines.append(
            f"End to end: beatflow's own summaries from {result['workflow']['results']} "
            "(its detected beats, its classes)"
        )
        lines += gross_lines(result["workflow"])
    return "\n".join(lines)


def gross_lines(section: dict) -> list[str]:
    lines = [table_rows(section["records"])]
    g = section["gross"]
    af, vr, vc = g["af"], g["ventricular"]["runs"], g["ventricular"]["couplets"]
    h = g["hrv_median_abs_relative_error"]
    lines.append(
        f"gross: max |HR error| {g['mean_bpm_error_max_abs']:.2f} bpm, minutes within 2 bpm "
        f"{pct(g['minutes_within_share'])} %, V runs Se/+P {pct(vr['se'])}/{pct(vr['ppv'])} "
        f"({vr['found']}/{vr['reference']}), V couplets Se/+P {pct(vc['se'])}/{pct(vc['ppv'])}, "
        f"pauses {g['pauses']['output']}/{g['pauses']['reference']}, AF duration Se/+P "
        f"{pct(af['duration_se'])}/{pct(af['duration_ppv'])}, false AF in no-AF records "
        f"{af['false_s_without_reference_af']:.1f} s, median |rel. error| SDNN {pct(h['sdnn_ms'])} % "
        f"rMSSD {pct(h['rmssd_ms'])} %"
    )
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=MITDB)
    p.add_argument("--records", help="comma-separated subset (default: every record in --data)")
    p.add_argument("--results", type=Path, help="a workflow run's results folder: also evaluate its summaries")
    p.add_argument("--af-events", action="store_true", help="only the AF events section (see the docstring)")
    p.add_argument(
        "--af-sensitivity", type=Path, nargs="+", metavar="FOLDER", help="the AF constants' sensitivity (docstring)"
    )
    p.add_argument("--json", type=Path, help="output JSON (default benchmarks/results/holter-ds1-<date>.json)")
    args = p.parse_args(argv)
    records = args.records.split(",") if args.records else sorted(x.stem for x in args.data.glob("*.atr"))
    if args.af_sensitivity:
        result = af_sensitivity({folder.name: folder for folder in args.af_sensitivity})
        if args.json:
            print(f"\nwrote {write_json(args.json, result, indent=1)}")
        return 0
    if args.af_events:
        section = af_events(records, args.data)
        print(af_events_table(section))
        if args.json:
            stamp = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "data": str(args.data)}
            print(f"\nwrote {write_json(args.json, {**stamp, **section}, indent=1)}")
        return 0
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": str(args.data),
        **run(records, args.data),
    }
    if args.results:
        result["workflow"] = workflow_section(records, args.data, args.results)
    print(table(result))
    if args.json or not args.records:
        path = write_json(args.json or RESULTS / f"holter-ds1-{today()}.json", result, indent=1)
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

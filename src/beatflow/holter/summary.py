"""The Holter summary of one record (``holter.json``, ``../shared/DESIGN.md``): heart rate, ectopy, pauses,
atrial fibrillation and HRV from the beats' times and AAMI classes.

Definitions (DESIGN.md, and where it leaves a choice, the choice made here):

- Artefact: with the signal at hand, the stretches where no lead is readable
  (:func:`beatflow.holter.quality.signal_quality`: flat line, saturation, lead-off, noise), listed with the
  reason of each lead; they are excluded stretches like the given ones.
- An RR interval joins two consecutive beats, whatever their classes (``Q`` beats too: a paced rhythm's, or
  beats in noise that the signal quality still reads). It is *analysable* unless it overlaps an excluded
  stretch (artefact, or given: e.g. ventricular flutter/fibrillation in the reference) or is a gap of
  :data:`GAP_S` or more without beats (unreadable signal, not a pause). ``analysed_s`` is the
  duration less the union of the excluded stretches and the non-analysable intervals (and a leading or trailing
  beat-free stretch of ``GAP_S`` or more).
- Rates use analysable intervals only: ``mean_bpm = 60 / mean RR``; a minute's rate is ``60 / mean RR`` of the
  intervals ending in it (whole minutes from the start); each minute also carries ``min_bpm`` / ``max_bpm``, the
  slowest and fastest beat-to-beat rate ending in it (for the trend figure). The record's min/max heart rate are
  the lowest and highest minute rates among minutes whose analysable intervals cover at least half the minute.
  ``fastest`` / ``slowest``: the highest and lowest rate over :data:`SINUS_BEATS` consecutive sinus beats (class
  N, outside AF; their intervals analysable), ``60 × 7 / (t[i+7] − t[i])``, at the first beat's time.
- The hourly table has one row per clock hour from the start, the last one partial when the record does not
  end on the hour.
- Runs, couplets and isolated beats: maximal sequences of consecutive beats of one class (all beats, whatever
  the interval's analysability, except those inside an excluded stretch or an AF episode), 1, 2, ≥ 3 beats.
  ``tachycardia``: the runs at :data:`TACHYCARDIA_BPM` or faster, ``VT`` (V) and ``SVT`` (S), in time order. ``beats``
  counts every beat. ``couplets_list`` (an addition to the contract) gives each
  couplet's ``start_s`` / ``end_s``, for the evaluation's overlap matching.
- Bigeminy (N-V)×k and trigeminy (N-N-V)×k, k ≥ 3: time from the first beat of the first cycle to the last
  beat of the last cycle (the V, where the MIT-BIH annotators end a ``(B`` or ``(T`` episode); a beat belongs to
  one pattern at most, bigeminy taking its beats first (:func:`cycles_times`: the two never overlap).
- Pauses: every analysable RR interval ≥ 2.0 s; with the signal at hand, not one that holds a missed beat:
  on any lead readable all through the interval, band-passed 5–20 Hz (the QRS band), the largest absolute
  value inside the interval (from 250 ms after its first beat to 250 ms before its last) reaches
  :data:`PAUSE_QRS_RATIO` of the flanking R waves' (the threshold lies between the ratios of annotated pauses
  and of pauses made by a missed beat: ``docs/experiments/holter.md`` §9). ``notes`` counts those left out.
- AF: episodes from :func:`beatflow.holter.af.detect_af` (or given), ``burden`` = AF time within the analysed
  time / ``analysed_s``.
- HRV over analysable NN intervals (both beats N, outside AF, neither beat next to a beat that is not N: the
  intervals next to an ectopic beat's own) within 20 % of the median of the 11 NN intervals around
  them and of the NN interval just before (:func:`nn_intervals`: the 20 % editing rules, so that a missed or
  false beat, or a premature beat classed N, does not enter as an interval of double or half length or as a
  short-long pair), sample standard deviations (ddof 1); SDANN and the SDNN
  index over the whole 5-minute segments from the start (an interval belongs to the segment it ends in);
  rMSSD and pNN50 (a share, 0–1) over the differences of successive NN intervals (three consecutive N beats);
  ``coverage``: the NN intervals' total time / ``analysed_s``. With the signal at hand, the intervals are
  timed from each beat's QRS aligned to the record's median N QRS (:mod:`beatflow.holter.fiducial`), not
  from the detector's peaks (:func:`hrv_times`).

Anything that cannot be computed is ``null`` and ``notes`` says why; nothing here raises on odd input.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from beatflow.dsp.filters import butter_band_pass
from beatflow.holter import af as af_module
from beatflow.holter.fiducial import aligned_times
from beatflow.holter.quality import readable, runs_of, signal_quality

CLASSES = ("N", "S", "V", "F", "Q")
GAP_S = 10.0  # an interval this long or longer is a beat-free gap (lead off), not a pause
PAUSE_S = 2.0
SEGMENT_S = 300.0  # SDANN / SDNN index segments
PAUSE_QRS_RATIO = 0.5  # a pause whose inside reaches this share of its flanking R waves holds a missed beat
NN_EDIT = 0.2  # an NN interval further than this from its neighbours' median, or from the one before, is left out
NN_EDIT_WINDOW = 11
MINUTE_COVERAGE = 0.5  # a minute counts for min/max heart rate when its intervals cover this share of it
SINUS_BEATS = 8  # the fastest and slowest rates are over this many consecutive sinus beats
TACHYCARDIA_BPM = 100.0


# ---------------------------------------------------------------- helpers on intervals [start, end)


def merge_intervals(intervals) -> list[tuple[float, float]]:
    """Union of ``[(start, end), …]`` as sorted disjoint intervals (empty ones dropped)."""
    out: list[list[float]] = []
    for s, e in sorted((float(s), float(e)) for s, e in intervals if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def total_length(intervals, lo: float = -np.inf, hi: float = np.inf) -> float:
    """Total length of the union of ``intervals`` clipped to ``[lo, hi]``."""
    return float(sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in merge_intervals(intervals)))


def overlap_length(a, b) -> float:
    """Length of the intersection of two unions of intervals."""
    a, b = merge_intervals(a), merge_intervals(b)
    total, j = 0.0, 0
    for s, e in a:
        while j < len(b) and b[j][1] <= s:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            total += max(0.0, min(e, b[k][1]) - max(s, b[k][0]))
            k += 1
    return total


def _num(x, digits: int = 2):
    """A JSON-friendly rounded float, or None for None/NaN."""
    if x is None:
        return None
    x = float(x)
    return None if not np.isfinite(x) else round(x, digits)


# ---------------------------------------------------------------- the parts of the summary


def analysable(time_s: np.ndarray, excluded) -> np.ndarray:
    """``valid[i]`` for the interval from beat i to beat i+1 (see the module's definitions)."""
    t = time_s
    if len(t) < 2:
        return np.zeros(0, dtype=bool)
    rr = np.diff(t)
    valid = (rr < GAP_S) & (rr > 0)
    for s, e in merge_intervals(excluded):
        valid &= (t[1:] <= s) | (t[:-1] >= e)
    return valid


def excluded_stretches(time_s, valid, duration_s: float, excluded) -> list[tuple[float, float]]:
    """All not-analysed time: the given stretches, the non-analysable intervals and beat-free ends."""
    t = time_s
    parts = [(max(0.0, s), min(duration_s, e)) for s, e in excluded]
    parts += [(float(t[i]), float(t[i + 1])) for i in np.flatnonzero(~valid)]
    if len(t) == 0:
        parts.append((0.0, duration_s))
    else:
        if t[0] >= GAP_S:
            parts.append((0.0, float(t[0])))
        if duration_s - t[-1] >= GAP_S:
            parts.append((float(t[-1]), duration_s))
    return merge_intervals(parts)


def minute_table(time_s, valid, duration_s: float) -> list[dict]:
    """Per whole minute: ``start_s``, ``bpm`` (60 / mean RR of the analysable intervals ending in it),
    ``min_bpm``, ``max_bpm`` (beat-to-beat), ``covered_s`` (sum of those intervals; dropped on output)."""
    n_min = int(duration_s // 60)
    rr = np.diff(time_s)[valid] if len(time_s) > 1 else np.zeros(0)
    end = time_s[1:][valid] if len(time_s) > 1 else np.zeros(0)
    minute = np.floor(end / 60.0).astype(np.int64)
    inside = minute < n_min
    rr, minute = rr[inside], minute[inside]
    count = np.bincount(minute, minlength=n_min)
    total = np.bincount(minute, weights=rr, minlength=n_min)
    rows = []
    order = np.argsort(minute, kind="stable")
    splits = np.split(rr[order], np.cumsum(count)[:-1]) if n_min else []
    for m in range(n_min):
        if count[m]:
            part = splits[m]
            rows.append(
                {
                    "start_s": 60.0 * m,
                    "bpm": 60.0 * count[m] / total[m],
                    "min_bpm": 60.0 / part.max(),
                    "max_bpm": 60.0 / part.min(),
                    "covered_s": float(total[m]),
                }
            )
        else:
            rows.append({"start_s": 60.0 * m, "bpm": None, "min_bpm": None, "max_bpm": None, "covered_s": 0.0})
    return rows


def class_runs(time_s, classes, cls: str) -> dict:
    """Isolated beats, couplets (and their times) and runs (≥ 3) of class ``cls``."""
    isolated, couplets, runs = 0, [], []
    for s, e in runs_of(classes == cls):
        n = e - s
        start, end = float(time_s[s]), float(time_s[e - 1])
        if n == 1:
            isolated += 1
        elif n == 2:
            couplets.append({"start_s": _num(start, 3), "end_s": _num(end, 3)})
        else:
            rate = 60.0 * (n - 1) / (end - start) if end > start else None
            runs.append({"start_s": _num(start, 3), "end_s": _num(end, 3), "beats": int(n), "rate_bpm": _num(rate, 1)})
    return {"isolated": isolated, "couplets": len(couplets), "runs": runs, "couplets_list": couplets}


def cycles_times(time_s, classes, patterns, min_cycles: int = 3) -> list[float]:
    """Total time of each pattern's stretches of ≥ ``min_cycles`` consecutive repetitions, each from its first
    beat to its last (the last cycle's last beat). The patterns take their beats in the order given, each
    leaving its stretches' beats out of the next one's (a regular expression over the class string, linear in
    the beats): a beat belongs to one pattern's stretch at most, and in ``(NNV)×3 (NV)×3`` the shared ``NV``
    opens bigeminy (four cycles) when bigeminy comes first, as the MIT-BIH annotators' ``(B`` episodes do."""
    text = "".join(classes.tolist())
    totals = []
    for pattern in patterns:
        expr = re.compile("(?:%s){%d,}" % ("".join(pattern), min_cycles))
        spans: list[tuple[int, int]] = []
        text = expr.sub(lambda m: spans.append(m.span()) or "-" * len(m.group()), text)
        totals.append(float(sum(time_s[e - 1] - time_s[s] for s, e in spans)))
    return totals


def between_clear_n(classes) -> np.ndarray:
    """Mask of the RR intervals whose two beats are N with N beats on both sides: the intervals
    :func:`nn_intervals` may keep, before analysability and editing."""
    n = classes == "N"
    clear = n & np.concatenate([[True], n[:-1]]) & np.concatenate([n[1:], [True]])
    return clear[:-1] & clear[1:]


def nn_intervals(time_s, classes, valid) -> np.ndarray:
    """Mask of the RR intervals that count as NN: analysable (AF left out by the caller), both beats N and
    neither next to a beat that is not N, within :data:`NN_EDIT` (20 %) of the median of the
    :data:`NN_EDIT_WINDOW` NN intervals around them (a missed or a false beat between two N beats would
    otherwise enter as one interval of double or half length, and a single such interval can move SDNN
    several-fold), and, where the interval before is NN too, within 20 % of it (Malik et al.'s successive
    20 % rule, Am J Cardiol 1989: a premature beat classed N and its compensatory interval, each within 20 %
    of the median, would otherwise enter rMSSD as one large successive difference)."""
    nn = valid & between_clear_n(classes)
    idx = np.flatnonzero(nn)
    if len(idx) < 3:
        return nn
    every_rr = np.diff(time_s)
    rr = every_rr[idx]
    half = NN_EDIT_WINDOW // 2
    padded = np.concatenate([np.full(half, np.nan), rr, np.full(half, np.nan)])
    med = np.nanmedian(np.lib.stride_tricks.sliding_window_view(padded, NN_EDIT_WINDOW), axis=1)
    out = np.zeros_like(nn)
    out[idx[np.abs(rr - med) <= NN_EDIT * med]] = True
    jump = out[1:] & out[:-1] & (np.abs(every_rr[1:] - every_rr[:-1]) > NN_EDIT * every_rr[:-1])
    out[1:] &= ~jump
    return out


def hrv(time_s, classes, valid, duration_s: float, analysed_s: float) -> dict:
    """Time-domain HRV over analysable, edited NN intervals (:func:`nn_intervals`; milliseconds, pNN50 a
    share) and their ``coverage`` of the analysed time."""
    out = dict.fromkeys(("sdnn_ms", "sdann_ms", "sdnn_index_ms", "rmssd_ms", "pnn50"))
    out["coverage"] = 0.0 if analysed_s > 0 else None
    if len(time_s) < 3:
        return out
    nn = nn_intervals(time_s, classes, valid)
    rr = np.diff(time_s) * 1000.0
    if analysed_s > 0:
        out["coverage"] = _num(min(rr[nn].sum() / 1000.0 / analysed_s, 1.0), 4)
    if nn.sum() >= 2:
        out["sdnn_ms"] = _num(np.std(rr[nn], ddof=1))
    succ = nn[:-1] & nn[1:]
    if succ.any():
        d = np.abs(np.diff(rr))[succ]
        out["rmssd_ms"] = _num(np.sqrt(np.mean(d**2)))
        out["pnn50"] = _num(np.mean(d > 50.0), 4)
    n_seg = int(duration_s // SEGMENT_S)
    kept = np.flatnonzero(nn)  # in time order, so each segment's intervals are one slice of them
    bounds = np.searchsorted(np.floor(time_s[1:][kept] / SEGMENT_S), np.arange(n_seg + 1))
    means, sds = [], []
    for k in range(n_seg):
        part = rr[kept[bounds[k] : bounds[k + 1]]]
        if len(part) >= 2:
            means.append(part.mean())
            sds.append(part.std(ddof=1))
    if len(means) >= 2:
        out["sdann_ms"] = _num(np.std(means, ddof=1))
    if sds:
        out["sdnn_index_ms"] = _num(np.mean(sds))
    return out


def hrv_times(t, c, signal) -> np.ndarray:
    """The beat times :func:`hrv` reads: with the signal at hand, the beats of every interval that may be NN
    (:func:`between_clear_n`) aligned to their median QRS (:func:`beatflow.holter.fiducial.aligned_times`);
    the detector's times otherwise. It needs neither the signal quality nor the AF episodes, so it runs while
    they are measured."""
    if signal is None:
        return t
    candidates = np.flatnonzero(between_clear_n(c))
    return aligned_times(t, np.union1d(candidates, candidates + 1), signal) if len(candidates) >= 2 else t


def missed_beat_ratio(x: np.ndarray, fs: float, a: float, b: float) -> float:
    """Largest QRS-band (5–20 Hz) amplitude inside the interval ``(a + 0.25, b − 0.25)`` s over the median of
    the flanking beats' (within 60 ms of ``a`` and ``b``); 0 when the signal does not cover it."""
    i0, i1 = max(int((a - 1.0) * fs), 0), min(int((b + 1.0) * fs), len(x))
    if i1 - i0 < int(fs):
        return 0.0
    y = np.abs(butter_band_pass(x[i0:i1], fs, 5.0, 20.0))

    def peak(lo_s, hi_s):
        k0, k1 = max(int(lo_s * fs) - i0, 0), min(int(hi_s * fs) - i0, len(y))
        return float(y[k0:k1].max()) if k1 > k0 else 0.0

    r = np.median([peak(a - 0.06, a + 0.06), peak(b - 0.06, b + 0.06)])
    return peak(a + 0.25, b - 0.25) / r if r > 0 else 0.0


# ---------------------------------------------------------------- the summary


def _sorted_beats(record: str, time_s, classes, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Beat times and classes as arrays in time order; a class outside :data:`CLASSES` becomes ``Q`` (noted)."""
    t = np.asarray(time_s, dtype=np.float64)
    c = np.asarray(classes).astype(str)
    if len(t) != len(c):
        raise ValueError(f"record {record!r}: {len(t)} beat times but {len(c)} classes")
    order = np.argsort(t, kind="stable")
    t, c = t[order], c[order]
    unknown = sorted(set(c.tolist()) - set(CLASSES))
    if unknown:
        notes.append(f"beats of unknown class {unknown} counted as Q (unclassifiable)")
        c = np.where(np.isin(c, CLASSES), c, "Q")
    return t, c


def _rated(minute: dict) -> bool:
    """Whether a minute counts for the minimum and maximum heart rate (:data:`MINUTE_COVERAGE`)."""
    return minute["bpm"] is not None and minute["covered_s"] >= MINUTE_COVERAGE * 60


def sinus_extremes(t, c, valid) -> tuple[dict, dict]:
    """``fastest`` and ``slowest``: ``{bpm, at_s}`` over :data:`SINUS_BEATS` consecutive sinus beats (N, their
    intervals analysable; AF intervals already not ``valid`` here), or nulls without such a stretch."""
    k = SINUS_BEATS - 1
    none = {"bpm": None, "at_s": None}
    if len(t) < SINUS_BEATS:
        return none, dict(none)
    ok = valid & (c[:-1] == "N") & (c[1:] == "N")
    all_ok = np.convolve(ok.astype(np.int64), np.ones(k, dtype=np.int64), mode="valid") == k
    first = np.flatnonzero(all_ok)
    if not len(first):
        return none, dict(none)
    bpm = 60.0 * k / (t[first + k] - t[first])
    hi, lo = first[np.argmax(bpm)], first[np.argmin(bpm)]
    return (
        {"bpm": _num(bpm.max(), 1), "at_s": _num(t[hi], 3)},
        {"bpm": _num(bpm.min(), 1), "at_s": _num(t[lo], 3)},
    )


def heart_rate_section(t, valid, rr, duration_s: float, notes: list[str]) -> tuple[dict, list[dict]]:
    """``holter.json``'s ``heart_rate`` (less ``fastest`` / ``slowest``) and the minute table it comes from
    (:func:`minute_table`)."""
    if valid.any():
        mean_bpm = 60.0 / rr[valid].mean()
    else:
        mean_bpm = None
        notes.append("no analysable RR interval: no heart rate, HRV or AF" if len(t) else "no beats")
    minutes = minute_table(t, valid, duration_s)
    if duration_s < 60:
        notes.append("record shorter than a minute: no per-minute rates, minimum or maximum heart rate")
    eligible = [m for m in minutes if _rated(m)]
    lo = min(eligible, key=lambda m: m["bpm"]) if eligible else None
    hi = max(eligible, key=lambda m: m["bpm"]) if eligible else None
    heart_rate = {
        "mean_bpm": _num(mean_bpm, 1),
        "min_bpm": _num(lo["bpm"], 1) if lo else None,
        "min_at_s": lo["start_s"] if lo else None,
        "max_bpm": _num(hi["bpm"], 1) if hi else None,
        "max_at_s": hi["start_s"] if hi else None,
        "minutes": [
            {
                "start_s": m["start_s"],
                "bpm": _num(m["bpm"], 1),
                "min_bpm": _num(m["min_bpm"], 1),
                "max_bpm": _num(m["max_bpm"], 1),
            }
            for m in minutes
        ],
    }
    return heart_rate, minutes


def holds_beat(leads: dict, fs: float, quality: dict, a: float, b: float) -> bool:
    """Whether a lead readable all through ``[a, b]`` shows a QRS-like wave inside it (:func:`missed_beat_ratio`)."""
    return any(
        readable(quality, name, a, b) and missed_beat_ratio(x, fs, a, b) >= PAUSE_QRS_RATIO for name, x in leads.items()
    )


def pauses_section(t, rr, valid, signal, quality, notes: list[str]) -> list[dict]:
    """``holter.json``'s ``pauses``: analysable intervals of :data:`PAUSE_S` or more, less those that hold a
    missed beat in a readable lead (:func:`holds_beat`, when ``signal`` is given)."""
    pause_idx = np.flatnonzero(valid & (rr >= PAUSE_S))
    if signal is not None and len(pause_idx):
        leads, fs = signal()
        holds_beat_ = np.array([holds_beat(leads, fs, quality, t[i], t[i + 1]) for i in pause_idx])
        if holds_beat_.any():
            notes.append(
                f"{int(holds_beat_.sum())} RR intervals of 2 s or more hold a QRS-like wave (a missed beat): "
                "not counted as pauses"
            )
        pause_idx = pause_idx[~holds_beat_]
    return [{"start_s": _num(t[i], 3), "duration_s": _num(rr[i], 3)} for i in pause_idx]


def af_section(
    t, c, valid, duration_s: float, af_episodes, stretches, analysed_s: float, signal, notes: list[str]
) -> dict:
    """``holter.json``'s ``af``: the episodes (detected by :func:`beatflow.holter.af.detect_af` unless given)
    and the burden over the analysed time."""
    if af_episodes is None:
        af_episodes = af_module.detect_af(t, c, valid, signal=signal)
    episodes = merge_intervals([(max(0.0, s), min(duration_s, e)) for s, e in af_episodes])
    af_s = total_length(episodes, 0.0, duration_s) - overlap_length(episodes, stretches)
    if af_s > 0 and analysed_s > 0 and af_s >= 0.9 * analysed_s:
        notes.append("atrial fibrillation all through: HRV is not sinus-rhythm HRV")
    return {
        "episodes": [{"start_s": _num(s, 3), "end_s": _num(e, 3)} for s, e in episodes],
        "burden": _num(af_s / analysed_s, 4) if analysed_s > 0 else None,
    }


def ectopy_sections(t, c, excluded) -> tuple[dict, dict]:
    """``holter.json``'s ``ventricular`` (with bigeminy and trigeminy) and ``supraventricular``. Beats inside
    an excluded stretch (artefact, AF, e.g. ventricular flutter) neither form nor break up runs there: they
    take a class of their own (``-``) that no run, couplet or cycle matches."""
    inside = np.zeros(len(t), dtype=bool)
    for s0, e0 in excluded:
        inside |= (t >= s0) & (t < e0)
    ce = np.where(inside, "-", c)
    ventricular = class_runs(t, ce, "V")
    bigeminy_s, trigeminy_s = cycles_times(t, ce, (("N", "V"), ("N", "N", "V")))
    ventricular["bigeminy_s"], ventricular["trigeminy_s"] = _num(bigeminy_s, 1), _num(trigeminy_s, 1)
    return ventricular, class_runs(t, ce, "S")


def tachycardia(ventricular: dict, supraventricular: dict) -> list[dict]:
    """``holter.json``'s ``tachycardia``: the V (``VT``) and S (``SVT``) runs at :data:`TACHYCARDIA_BPM` or
    faster, in time order."""
    out = [
        {"kind": kind, **run}
        for kind, part in (("VT", ventricular), ("SVT", supraventricular))
        for run in part["runs"]
        if run["rate_bpm"] is not None and run["rate_bpm"] >= TACHYCARDIA_BPM
    ]
    return sorted(out, key=lambda r: r["start_s"])


def hourly_table(
    t, c, rr, valid, minutes: list[dict], pauses: list[dict], duration_s: float, notes: list[str]
) -> list[dict]:
    """``holter.json``'s ``hourly``: one row per clock hour from the start (the last one may be partial)."""
    hourly = []
    n_hours = int(np.ceil(duration_s / 3600.0)) if duration_s > 0 else 0
    if 0 < duration_s < 3600:
        notes.append("record shorter than an hour: the hourly table has one partial hour")
    edges = 3600.0 * np.arange(n_hours + 1)
    beat_at, rr_at = np.searchsorted(t, edges), np.searchsorted(t[1:], edges)  # t in time order: hours are slices
    pause_hour = np.floor(np.array([p["start_s"] for p in pauses]) / 3600.0)
    for h in range(n_hours):
        h0, h1 = edges[h], edges[h + 1]
        in_hour = c[beat_at[h] : beat_at[h + 1]]
        rr_h = rr[rr_at[h] : rr_at[h + 1]][valid[rr_at[h] : rr_at[h + 1]]] if len(rr) else rr
        mins = [m["bpm"] for m in minutes[60 * h : 60 * (h + 1)] if h0 <= m["start_s"] < h1 and _rated(m)]
        hourly.append(
            {
                "start_s": h0,
                "beats": len(in_hour),
                "mean_bpm": _num(60.0 / rr_h.mean(), 1) if len(rr_h) else None,
                "min_bpm": _num(min(mins), 1) if mins else None,
                "max_bpm": _num(max(mins), 1) if mins else None,
                "V": int((in_hour == "V").sum()),
                "S": int((in_hour == "S").sum()),
                "pauses": int((pause_hour == h).sum()),
            }
        )
    return hourly


def summary_from_beats(
    record: str, time_s, classes, duration_s: float, excluded=(), af_episodes=None, signal=None, start=None
) -> dict:
    """The ``holter.json`` dict from beat times and AAMI classes (the module docstring defines each figure).

    Parameters
    ----------
    record : str
        The record's name, kept in the summary and in error messages.
    time_s : array_like of float
        Beat times, seconds from the record's start (any order: they are sorted).
    classes : array_like of str
        Each beat's AAMI class (``N``, ``S``, ``V``, ``F``, ``Q``; another value counts as ``Q``, noted), as
        many as ``time_s`` (a ValueError otherwise).
    duration_s : float
        The record's duration in seconds.
    excluded : sequence of (float, float), optional
        ``[(start_s, end_s), …]`` stretches not analysed, beyond those found here.
    af_episodes : sequence of (float, float), optional
        AF episodes to use instead of detecting them (the reference summary passes its rhythm annotations).
    signal : callable, optional
        Returns ``(lead name → numpy array, fs)``: for the signal quality (artefact), the pause check, the AF
        detector's P-wave check and the HRV beat times (every lead). None: no artefact is measured, HRV is
        timed from ``time_s``.
    start : str, optional
        The recording's start (ISO 8601), kept as ``start``; None when unknown.

    Returns
    -------
    dict
        The summary: ``record``, ``start``, ``duration_s``, ``analysed_s``, ``artefact``, ``beats``,
        ``heart_rate``, ``hourly``, ``ventricular``, ``supraventricular``, ``pauses``, ``af``, ``tachycardia``,
        ``hrv`` and ``notes``.
    """
    notes: list[str] = []
    t, c = _sorted_beats(record, time_s, classes, notes)
    with ThreadPoolExecutor(max_workers=1) as pool:  # the HRV times are aligned while the quality is measured
        hrv_time_s = pool.submit(hrv_times, t, c, signal).result
        quality = signal_quality(*signal()) if signal is not None else None
        sections = _sections(t, c, float(duration_s), excluded, af_episodes, signal, quality, hrv_time_s, notes)
    return {"record": record, "start": start, **sections, "notes": notes}


def _sections(t, c, duration_s: float, excluded, af_episodes, signal, quality, hrv_time_s, notes: list[str]) -> dict:
    """:func:`summary_from_beats`'s sections, from ``duration_s`` to ``hrv``, for the sorted beats ``t``, ``c``,
    the signal's ``quality`` (:func:`beatflow.holter.quality.signal_quality`; None without a signal) and
    ``hrv_time_s``, a callable giving the beat times HRV reads (:func:`hrv_times`)."""
    artefact = [(a["start_s"], min(a["end_s"], duration_s)) for a in quality["artefact"]] if quality else []
    excluded = merge_intervals([*(excluded or []), *artefact])
    valid = analysable(t, excluded)
    stretches = excluded_stretches(t, valid, duration_s, excluded)
    analysed_s = max(0.0, duration_s - total_length(stretches, 0.0, duration_s))
    rr = np.diff(t) if len(t) > 1 else np.zeros(0)
    heart_rate, minutes = heart_rate_section(t, valid, rr, duration_s, notes)
    pauses = pauses_section(t, rr, valid, signal, quality, notes)
    af = af_section(t, c, valid, duration_s, af_episodes, stretches, analysed_s, signal, notes)
    af_spans = [(e["start_s"], e["end_s"]) for e in af["episodes"]]
    excluded_or_af = merge_intervals([*excluded, *af_spans])
    sinus = analysable(t, excluded_or_af)
    heart_rate["fastest"], heart_rate["slowest"] = sinus_extremes(t, c, sinus)
    ventricular, supraventricular = ectopy_sections(t, c, excluded_or_af)
    hourly = hourly_table(t, c, rr, valid, minutes, pauses, duration_s, notes)
    hrv_out = hrv(hrv_time_s(), c, sinus, duration_s, analysed_s)
    if len(t) and not (c == "N").any():
        notes.append("no N beats (paced or all ectopic): no HRV")
    return {
        "duration_s": _num(duration_s, 3),
        "analysed_s": _num(analysed_s, 3),
        "artefact": {
            "episodes": [
                {"start_s": _num(a["start_s"], 3), "end_s": _num(min(a["end_s"], duration_s), 3), "leads": a["leads"]}
                for a in (quality["artefact"] if quality else [])
            ],
            "total_s": _num(total_length(artefact, 0.0, duration_s), 3),
        },
        "beats": {"total": int(len(t)), **{k: int((c == k).sum()) for k in CLASSES}},
        "heart_rate": heart_rate,
        "hourly": hourly,
        "ventricular": ventricular,
        "supraventricular": supraventricular,
        "pauses": pauses,
        "af": af,
        "tachycardia": tachycardia(ventricular, supraventricular),
        "hrv": hrv_out,
    }


# ---------------------------------------------------------------- from the workflow's files


def read_beats(record: str, scores_path) -> tuple[np.ndarray, np.ndarray]:
    """``(time_s, class)`` of every detected beat in ``scores.parquet`` (pyarrow only: the rule stays light).

    Parameters
    ----------
    record : str
        The record's name (for messages).
    scores_path : path-like
        Its ``scores.parquet``.

    Raises
    ------
    BeatflowError
        When the file or its ``class`` column is missing.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from beatflow.errors import BeatflowError
    from beatflow.io.tables import read_schema

    names = set(read_schema(scores_path).names)
    missing = sorted({"time_s", "class"} - names)
    if missing:
        raise BeatflowError(
            f"scores.parquet has no column {', '.join(missing)} (the beat classes are needed for the Holter summary)",
            record=record,
            path=str(scores_path),
        )
    try:
        table = pq.ParquetFile(scores_path).read(columns=["time_s", "class"], use_pandas_metadata=False)
    except (pa.ArrowException, OSError) as exc:
        raise BeatflowError(f"cannot read table ({exc})", record=record, path=str(scores_path)) from exc
    # to_pylist: pyarrow's to_numpy imports pandas, which the rule does not otherwise need
    time_s = np.array(table.column("time_s").to_pylist(), dtype=np.float64)
    classes = np.array([str(c) for c in table.column("class").to_pylist()], dtype=object).astype(str)
    return time_s, classes


def record_duration_s(signal_path) -> float:
    """The record's duration from ``signal.parquet``'s footer: rows / ``fs`` (no signal is read)."""
    import pyarrow.parquet as pq

    from beatflow.io.tables import signal_info

    fs, _ = signal_info(signal_path)
    return pq.ParquetFile(signal_path).metadata.num_rows / fs


def read_leads(signal_path):
    """A callable giving ``(lead name → LeadStretches, fs)`` of ``signal.parquet``
    (:func:`beatflow.io.tables.read_signal_stretches`): the checks read the lead a part at a time, so host
    memory does not grow with the record."""

    def load():
        from beatflow.io.tables import read_signal_stretches, signal_info

        fs, names = signal_info(signal_path)
        return read_signal_stretches(signal_path, names), fs

    return load


def summarise(record: str, scores_path, signal_path, excluded=()) -> dict:
    """The Holter summary of a record from the workflow's ``scores.parquet`` and ``signal.parquet`` (every
    lead, for the signal quality; the recording's start from its metadata).

    Parameters
    ----------
    record : str
        The record's name.
    scores_path : path-like
        ``scores.parquet``, with the columns ``time_s`` and ``class``.
    signal_path : path-like
        ``signal.parquet``: the duration from its footer, its leads for the checks.
    excluded : sequence of (float, float), optional
        ``[(start_s, end_s), …]`` not analysed: none in the workflow; the evaluation passes the reference's
        ventricular flutter/fibrillation episodes, which EC57 leaves out and the reference summary does not
        analyse.

    Returns
    -------
    dict
        The ``holter.json`` dict (:func:`summary_from_beats`).

    Raises
    ------
    beatflow.errors.BeatflowError
        When ``scores.parquet`` cannot be read or lacks a column.
    """
    from beatflow.io.tables import signal_start

    time_s, classes = read_beats(record, scores_path)
    start, signal = signal_start(signal_path), read_leads(signal_path)
    summary = summary_from_beats(
        record,
        time_s,
        classes,
        record_duration_s(signal_path),
        excluded=excluded,
        signal=signal,
        start=None if start is None else start.isoformat(),
    )
    summary["notes"].extend(rate_notes(signal, time_s))
    return summary


def rate_notes(signal, time_s) -> list[str]:
    """The segment stage's sampling-rate check (:func:`beatflow.detect.segment.implausible_rate`) on the first
    lead, as a note: a summary built on a wrong ``fs`` says so."""
    from beatflow.backend import select_backend
    from beatflow.detect.segment import implausible_rate

    leads, fs = signal()
    if not leads:
        return []
    peaks = np.round(np.sort(np.asarray(time_s, dtype=np.float64)) * fs).astype(np.int64)
    problem = implausible_rate(next(iter(leads.values())), peaks, fs, select_backend("cpu"))
    return [problem] if problem else []


def write_json(summary: dict, out_path) -> None:
    """Write a summary as JSON, atomically."""
    from beatflow.io.atomic import atomic_path

    with atomic_path(Path(out_path)) as tmp:
        tmp.write_text(json.dumps(summary, indent=2) + "\n")


def write_holter(record: str, scores_path, signal_path, out_path, annotations_path=None) -> dict:
    """Rule ``holter``'s stage: compute the record's summary, write ``holter.json`` and ``beats.atr``
    (:mod:`beatflow.holter.annotations`) atomically and return the summary.

    Parameters
    ----------
    record : str
        The record's name.
    scores_path, signal_path : path-like
        The record's ``scores.parquet`` and ``signal.parquet`` (:func:`summarise`).
    out_path : path-like
        Where ``holter.json`` goes.
    annotations_path : path-like, optional
        Where ``beats.atr`` goes (default: beside ``holter.json``).

    Returns
    -------
    dict
        The summary written.
    """
    import pyarrow.parquet as pq

    from beatflow.holter.annotations import write_annotations
    from beatflow.io.tables import signal_info

    summary = summarise(record, scores_path, signal_path)
    write_json(summary, out_path)
    table = pq.ParquetFile(scores_path).read(columns=["peak", "class"], use_pandas_metadata=False)
    write_annotations(
        table.column("peak").to_pylist(),
        table.column("class").to_pylist(),
        summary["af"]["episodes"],
        signal_info(signal_path)[0],
        annotations_path or Path(out_path).with_name("beats.atr"),
    )
    return summary

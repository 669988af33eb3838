"""What the quality suite (:mod:`benchmarks.quality`) measured where beatflow went wrong: for the detector,
at each missed
and each false beat (:func:`diagnose`, :func:`by_label`); for the anomaly scores, why normal beats score high
and abnormal ones low (:func:`anomaly_diagnosis`). Every figure goes into the suite's JSON.
"""

from __future__ import annotations

import numpy as np


def diagnose(
    x: np.ndarray,
    clean: np.ndarray,
    fs: float,
    true: np.ndarray,
    labels: np.ndarray,
    detected: np.ndarray,
    ti: np.ndarray,
    di: np.ndarray,
    max_examples: int = 25,
) -> dict:
    """What beatflow's detector saw, in the first lead, at each missed and each false beat (where the second
    lead shows the beats, the detector's own envelope also has the second lead fused in: ``beatflow.detect.fusion``).

    Recomputes the first lead's detection envelope ``r`` (``envelope.detection_envelope``: per wavelet width,
    the oriented
    response over its local reference, the larger of the two) and, with the same signs and references, the
    envelope of the noise alone (``x`` minus the noise-free ``clean`` rendering of the same record) and of the
    noise-free signal. For a missed beat: the largest ``r`` within ±50 ms of the true peak as a multiple of
    the threshold (< 1: below the threshold), whether a larger ``r`` within the NMS window suppressed it, and
    the nearest detection. For a false beat: its ``r`` over the threshold and the distance to the nearest true
    beat (a second peak of one beat, a T wave, or noise far from any beat), and whether the noise alone
    crosses the threshold there.

    Readability: the QRS-band signal-to-noise ratio, the median envelope of the noise-free signal at the true
    peaks over the rms envelope of the noise alone, for the whole record and for its worst 2-s window.
    """
    from beatflow.backend import select_backend
    from benchmarks.common import stage_params

    p, backend = stage_params()[0], select_backend("cpu")
    r, r_noise, r_clean = envelopes(x, clean, fs, p, backend)
    env = {"r": r, "noise": r_noise, "clean": r_clean, "fs": fs, "threshold": p.threshold, "half": p.nms_half(fs)}
    miss_rows = [missed_row(env, true, labels, detected, k) for k in np.setdiff1d(np.arange(len(true)), ti)]
    false_rows = [false_row(env, true, labels, detected, k) for k in np.setdiff1d(np.arange(len(detected)), di)]
    return {
        "params": {
            "nms_window_s": p.nms_window_s,
            "threshold": p.threshold,
            "block_s": p.max_rr_s,
            "wavelet_widths_s": list(p.widths_s),
        },
        "readability": readability(r_noise, r_clean, true, fs),
        "beat_response_over_threshold": beat_margins(r, true, labels, fs, p.threshold),
        "noise_peaks_over_threshold": noise_margins(r_noise, fs, p, backend),
        "missed_by_label": tally(miss_rows, "label"),
        "missed_by_cause": tally(miss_rows),
        "false_by_cause": tally(false_rows),
        "missed_response_over_threshold_median": float(np.median([m["response_over_threshold"] for m in miss_rows]))
        if miss_rows
        else None,
        "missed": miss_rows[:max_examples],
        "false": false_rows[:max_examples],
    }


def envelopes(x: np.ndarray, clean: np.ndarray, fs: float, p, backend) -> tuple:
    """The detector's envelope of ``x``, of its noise alone and of its noise-free rendering, all oriented and
    scaled as the detector does for ``x``."""
    from beatflow.detect.envelope import per_block, polarity_and_reference, wavelet_responses

    block = p.block(fs)
    scales = [
        sign * reference
        for sign, reference in (
            polarity_and_reference(r, block, np) for r in wavelet_responses(x, fs, p.widths_s, backend.xp)
        )
    ]

    def envelope(y):
        return np.max(
            [per_block(r, scale, block) for r, scale in zip(wavelet_responses(y, fs, p.widths_s, backend.xp), scales)],
            axis=0,
        )

    return envelope(x), envelope(x - clean), envelope(clean)


def readability(r_noise: np.ndarray, r_clean: np.ndarray, true: np.ndarray, fs: float) -> dict:
    """The QRS-band SNR of the whole record and of its worst 2-s window."""
    qrs = float(np.median(r_clean[true]))
    window = max(1, round(2 * fs))
    rms = np.sqrt(np.convolve(r_noise.astype(np.float64) ** 2, np.ones(window) / window, mode="valid"))
    return {
        "qrs_band_snr": qrs / float(np.sqrt(np.mean(r_noise.astype(np.float64) ** 2))),
        "qrs_band_snr_worst_2s": qrs / float(rms.max()),
    }


def beat_margins(r: np.ndarray, true: np.ndarray, labels: np.ndarray, fs: float, threshold: float) -> dict:
    """Per label, every true beat's largest envelope (±50 ms) over the threshold: the minimum and 1 % quantile."""
    w = round(0.05 * fs)
    at_beats = np.array([r[max(0, i - w) : i + w + 1].max() for i in true]) / threshold
    return {
        str(lab): {
            "min": float(at_beats[labels == lab].min()),
            "p01": float(np.quantile(at_beats[labels == lab], 0.01)),
        }
        for lab in np.unique(labels)
    }


def noise_margins(r_noise: np.ndarray, fs: float, p, backend) -> dict:
    """The noise envelope's own NMS peaks over the threshold: 99 % quantile, maximum, and how many an hour
    cross it."""
    from beatflow.detect.peaks import nms_mask

    noise_peaks = np.flatnonzero(nms_mask(np.ascontiguousarray(r_noise), p.nms_half(fs), backend))
    over = r_noise[noise_peaks] / p.threshold
    hours = len(r_noise) / fs / 3600
    return {
        "p99": float(np.quantile(over, 0.99)),
        "max": float(over.max()),
        "above_threshold_per_hour": float((over > 1).sum() / hours),
    }


def missed_row(env: dict, true: np.ndarray, labels: np.ndarray, detected: np.ndarray, k: int) -> dict:
    """What the envelope shows at missed true beat ``k``, and why it was missed."""
    r, fs, threshold, half, n = env["r"], env["fs"], env["threshold"], env["half"], len(env["r"])
    i = int(true[k])
    rr = (i - int(true[k - 1])) / fs if k > 0 else 0.0
    lo, hi = max(0, i - round(0.05 * fs)), min(n, i + round(0.05 * fs) + 1)  # the QRS itself: ±50 ms
    j = lo + int(np.argmax(r[lo:hi]))
    wlo, whi = max(0, j - half), min(n, j + half + 1)
    bigger = wlo + int(np.argmax(r[wlo:whi]))
    near = int(np.argmin(np.abs(detected - i))) if len(detected) else -1
    if r[j] <= threshold:
        why = "below threshold"
    elif bigger != j and r[bigger] >= r[j]:
        why = "suppressed by a larger response within the NMS window"
    else:
        why = "other"
    return {
        "time_s": round(i / fs, 3),
        "label": str(labels[k]),
        "rr_s": round(float(rr), 3),
        "next_rr_s": round(float((true[k + 1] - i) / fs), 3) if k + 1 < len(true) else None,
        "response_over_threshold": round(float(r[j] / threshold), 3),
        "noise_free_over_threshold": round(float(env["clean"][lo:hi].max() / threshold), 3),
        "suppressor_offset_s": round((bigger - j) / fs, 3) if bigger != j else None,
        "nearest_detection_offset_s": round((int(detected[near]) - i) / fs, 3) if near >= 0 else None,
        "why": why,
    }


def false_row(env: dict, true: np.ndarray, labels: np.ndarray, detected: np.ndarray, k: int) -> dict:
    """What the envelope shows at false detection ``k``, and what crossed the threshold there."""
    fs, threshold, n = env["fs"], env["threshold"], len(env["r"])
    i = int(detected[k])
    near = int(np.argmin(np.abs(true - i)))
    lo, hi = max(0, i - round(0.025 * fs)), min(n, i + round(0.025 * fs) + 1)
    noise_alone = float(env["noise"][lo:hi].max() / threshold)
    clean_here = float(env["clean"][i] / threshold)
    if noise_alone > 1:
        why = "noise alone crosses the threshold"
    elif clean_here > 1:
        why = "the noise-free beat itself crosses the threshold here (T wave or a second lobe)"
    else:
        why = "beat and noise together cross the threshold"
    return {
        "time_s": round(i / fs, 3),
        "nearest_true_offset_s": round((i - int(true[near])) / fs, 3),
        "nearest_true_label": str(labels[near]),
        "response_over_threshold": round(float(env["r"][i] / threshold), 3),
        "noise_alone_over_threshold": round(noise_alone, 3),
        "noise_free_over_threshold": round(clean_here, 3),
        "why": why,
    }


def tally(rows: list[dict], key: str = "why") -> dict:
    out: dict = {}
    for row in rows:
        out[row[key]] = out.get(row[key], 0) + 1
    return out


def by_label(true_labels: np.ndarray, ti: np.ndarray) -> dict:
    """Missed beats per truth label."""
    missed = np.ones(len(true_labels), bool)
    missed[ti] = False
    kinds, counts = np.unique(true_labels[missed], return_counts=True)
    return {str(k): int(c) for k, c in zip(kinds, counts)}


def window_noise_rms(noise: np.ndarray, peaks: np.ndarray, pre: int, row: int) -> np.ndarray:
    """The rms of the noise alone (mV) in each beat's embedded window (``pre`` samples before its peak, ``row``
    long)."""
    return np.array(
        [float(np.sqrt(np.mean(noise[max(0, p - pre) : max(0, p - pre) + row].astype(np.float64) ** 2))) for p in peaks]
    )


def per_label(lab: np.ndarray, score_: np.ndarray, reason: np.ndarray) -> dict:
    """Per label: how many, the score quantiles and the part that won (``reason``)."""
    out = {}
    for k in sorted(set(lab)):
        sel = lab == k
        reasons, counts = np.unique(reason[sel], return_counts=True)
        out[k] = {
            "n": int(sel.sum()),
            "score_quantiles_0_10_50_90": [float(v) for v in np.quantile(score_[sel], [0, 0.1, 0.5, 0.9])],
            "reason": {(r or "not flagged"): int(c) for r, c in zip(reasons, counts)},
        }
    return out


def anomaly_diagnosis(
    table, true: np.ndarray, labels: np.ndarray, fs: float, n: int, length_s: float, noise: np.ndarray
) -> dict:
    """Why normal beats score high and abnormal ones low: per label, the score quantiles and the part that
    won (``reason``); the normal beats' flagged share by their beat length (samples to the next peak, which
    sets where the embedded row is cut and zero-padded; rows are ``embed.length_s`` long), by their
    neighbours, and by the noise in their window (rms of the noise alone, mV)."""
    from beatflow.evaluate import TOLERANCE_S, match
    from benchmarks.common import stage_params

    peaks = table.peak.to_numpy()
    ti, di = match(true, peaks, TOLERANCE_S * fs)
    lab = labels[ti]
    score_ = table.score.to_numpy()[di]
    reason = table.reason.to_numpy()[di].astype(str)
    length = np.diff(peaks, append=n)[di] / fs
    prev = np.array([labels[i - 1] if i > 0 else "-" for i in ti])
    nxt = np.array([labels[i + 1] if i + 1 < len(labels) else "-" for i in ti])
    noise_rms = window_noise_rms(noise, peaks[di], round(stage_params()[0].pre_peak_s * fs), round(length_s * fs))
    normal = lab == "N"
    out = {"labels": per_label(lab, score_, reason), "normal": {}}
    flagged = score_ > 1

    def share(sel):
        return {"n": int(sel.sum()), "flagged": float(flagged[sel].mean()) if sel.any() else None}

    bins = [(0, 0.8), (0.8, 0.95), (0.95, 1.0), (1.0, 1.05), (1.05, np.inf)]
    out["normal"]["flagged_by_length_over_row"] = {
        f"{lo:g}-{hi:g}": share(normal & (length >= lo * length_s) & (length < hi * length_s)) for lo, hi in bins
    }
    ectopic = np.isin(prev, ["V", "A", "L"]) | np.isin(nxt, ["V", "A", "L"])
    false = np.ones(len(peaks), bool)
    false[di] = False
    near_false = np.zeros(len(peaks), bool)  # the detected beat before or after is a false detection
    near_false[1:] |= false[:-1]
    near_false[:-1] |= false[1:]
    out["normal"]["flagged_next_to_a_false_detection"] = share(normal & near_false[di])
    out["normal"]["flagged_before_a_premature_beat"] = share(normal & np.isin(nxt, ["V", "A"]))
    out["normal"]["flagged_after_an_ectopic_beat"] = share(normal & np.isin(prev, ["V", "A", "L"]))
    out["normal"]["flagged_next_to_ectopic"] = share(normal & ectopic)
    out["normal"]["flagged_between_normal"] = share(normal & ~ectopic)
    q = np.quantile(noise_rms[normal], [0.5, 0.9]) if normal.any() else [0, 0]
    out["normal"]["flagged_by_noise"] = {
        "quietest_half": share(normal & (noise_rms <= q[0])),
        "noisiest_tenth": share(normal & (noise_rms > q[1])),
    }
    reasons, counts = np.unique(reason[normal & flagged], return_counts=True)
    out["normal"]["flagged_reason"] = {r: int(c) for r, c in zip(reasons, counts)}
    return out

"""Detection at another sampling rate: each annotated WFDB record of a folder, as recorded and resampled to
each ``--fs`` (scipy's polyphase filter), detected by beatflow (default config, CPU) and matched to its
reference beats within 150 ms (EC57), over the whole record and inside its atrial fibrillation and flutter
(the ``(AFIB`` / ``(AFL`` rhythm annotations, where the database has them); gross figures, as JSON.

    python -m benchmarks.resampled_detection ../shared/mitdb --fs 200 128 \
        --out benchmarks/results/resampled-detection-mitdb-<date>.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common import machine, today, write_json

AF_RHYTHMS = ("(AFIB", "(AFL")


def af_samples(path: Path, n: int) -> np.ndarray:
    """Per sample of the record, whether its rhythm annotation is atrial fibrillation or flutter."""
    import wfdb

    ann = wfdb.rdann(str(path), "atr")
    inside, rhythm, since = np.zeros(n + 1, dtype=bool), None, 0
    for sample, note in zip(ann.sample, ann.aux_note, strict=True):
        if note.startswith("("):
            inside[since:sample] = rhythm in AF_RHYTHMS
            rhythm, since = note.rstrip("\x00"), sample
    inside[since:] = rhythm in AF_RHYTHMS
    return inside


def counts(path: Path, fs_out: float | None) -> dict[str, list[int]]:
    """``{"all" | "af": [reference beats found, reference beats, detections matched, detections]}``."""
    from beatflow.classify.dataset import detected_peaks, read_leads, read_reference_beats
    from beatflow.evaluate import TOLERANCE_S, match
    from beatflow.io.truth import outside

    signals, leads, fs, ratio = read_leads(path, fs_out)
    peaks = detected_peaks([signals[lead] for lead in leads], fs)
    reference, _, excluded = read_reference_beats(path, ratio)
    reference, peaks = reference[outside(reference, excluded)], peaks[outside(peaks, excluded)]
    ti, di = match(reference, peaks, TOLERANCE_S * fs)
    n = round(len(signals[leads[0]]) / ratio)  # the record's samples as recorded
    af = af_samples(path, n)
    in_af = [af[np.minimum(np.round(s / ratio).astype(np.int64), n)] for s in (reference, peaks)]
    found = [np.isin(np.arange(len(s)), i) for s, i in ((reference, ti), (peaks, di))]
    out = {}
    for part, masks in (("all", [np.ones(len(m), bool) for m in in_af]), ("af", in_af)):
        out[part] = [int((found[0] & masks[0]).sum()), int(masks[0].sum()), int((found[1] & masks[1]).sum())]
        out[part].append(int(masks[1].sum()))
    return out


def figures(total: list[int]) -> dict:
    found, reference, matched, detections = total
    return {
        "reference_beats": reference,
        "missed": reference - found,
        "false_detections": detections - matched,
        "se_pct": round(100 * found / reference, 2) if reference else None,
        "ppv_pct": round(100 * matched / detections, 2) if detections else None,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", type=Path, help="a folder of WFDB records with .atr reference annotations")
    p.add_argument("--fs", type=float, nargs="+", default=[200.0], help="rates to resample to (Hz)")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    records = sorted(h.with_suffix("") for h in a.data.glob("*.hea"))
    result = {"date": today(), "machine": machine(["numpy", "scipy", "wfdb"]), "data": str(a.data), "rates": {}}
    for fs_out in [None, *a.fs]:
        totals = {"all": [0, 0, 0, 0], "af": [0, 0, 0, 0]}
        for path in records:
            for part, c in counts(path, fs_out).items():
                totals[part] = [t + v for t, v in zip(totals[part], c, strict=True)]
        result["rates"]["as recorded" if fs_out is None else f"{fs_out:g} Hz"] = {
            k: figures(v) for k, v in totals.items()
        }
        print(fs_out, result["rates"], flush=True)
    write_json(a.out, result)


if __name__ == "__main__":
    main()

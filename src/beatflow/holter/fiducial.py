"""The beat times HRV is computed from: each sinus beat's QRS aligned to the record's median sinus QRS.

The detector's peak is the largest point of its filtered complex. Where a complex has two points of about the
same size (an RS complex, a notched QRS) it takes one or the other, beat to beat, tens of milliseconds apart,
and each switch enters the successive differences (rMSSD, pNN50) as if the heart had changed its rhythm.
Aligning every beat to one template puts the same point of the complex on every beat (HRV needs a fiducial
point that is the same on every beat: Task Force of the ESC and NASPE, 1996; ``docs/experiments/holter.md``
§24 has the measurements):

- the template is the median QRS (:data:`QRS_S` about the peak, every lead, at the record's own rate) of at
  most :data:`TEMPLATE_BEATS` of the beats, spread over the record, each aligned to the median
  (:func:`beatflow.dsp.templates.template`);
- each beat moves to its best match within :data:`SHIFT_S` (normalised correlation over every lead:
  :func:`beatflow.dsp.templates.best_shift`), to a whole sample: its time stays on the record's sample grid, as
  the detector's and the annotators' do (at 128 Hz, times between samples read low-HRV records' rMSSD a
  quarter below the annotations', whose rounding adds to it).

Windows are read about the beats only (:func:`beatflow.holter.af.samples_at`), :data:`CHUNK` beats at a time.
"""

from __future__ import annotations

import numpy as np

from beatflow.dsp.templates import best_shift, spread, template
from beatflow.holter.af import samples_at

QRS_S = (-0.10, 0.12)
SHIFT_S = 0.08
TEMPLATE_BEATS = 512
CHUNK = 8192


def _windows(leads: list, peaks: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``[beats, leads, hi - lo]``: each lead's samples ``peak + lo`` to ``peak + hi`` (clipped to the lead)."""
    offsets = np.arange(lo, hi)
    out = []
    for x in leads:
        index = np.clip(peaks[:, None] + offsets[None, :], 0, len(x) - 1)
        out.append(samples_at(x, index).astype(np.float32))
    return np.stack(out, 1)


def aligned_times(time_s: np.ndarray, beats: np.ndarray, signal) -> np.ndarray:
    """``time_s`` with the beats ``beats`` (indices, at least two) moved to their QRS's best match with the
    template of those beats (module docstring); ``signal``: a callable returning ``(lead name → lead, fs)``."""
    leads, fs = signal()
    leads = list(leads.values())
    peaks = np.round(np.asarray(time_s)[beats] * fs).astype(np.int64)
    lo, hi = round(QRS_S[0] * fs), round(QRS_S[1] * fs)
    pad = max(1, round(SHIFT_S * fs))
    chosen = peaks[spread(np.arange(len(beats)), TEMPLATE_BEATS)]
    reference = template(_windows(leads, chosen, lo - 2 * pad, hi + 2 * pad), pad)[:, pad:-pad]
    out = np.array(time_s, dtype=np.float64)
    for start in range(0, len(beats), CHUNK):
        part = slice(start, start + CHUNK)
        shift = best_shift(_windows(leads, peaks[part], lo - pad, hi + pad), reference, pad)
        out[beats[part]] = (peaks[part] + shift) / fs
    return out

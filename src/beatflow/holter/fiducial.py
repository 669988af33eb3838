"""The beat times HRV is computed from: each N beat's QRS aligned to the record's median N QRS.

The detector's peak is the largest point of its filtered complex. Where a complex has two points of about the
same size (an RS complex, a notched QRS) it takes one or the other, beat to beat, tens of milliseconds apart,
and each switch enters the successive differences (rMSSD, pNN50) as if the heart had changed its rhythm.
Aligning every beat to one template puts the same point of the complex on every beat (HRV needs a fiducial
point that is the same on every beat: Task Force of the ESC and NASPE, 1996; ``docs/experiments/holter.md``
§24 has the measurements):

- the template is the median QRS (:data:`QRS_S` about the peak, every lead, at the record's own rate) of at
  most :data:`TEMPLATE_BEATS` of the first chunk's beats, spread over them, each aligned to the median
  (:func:`beatflow.dsp.templates.template`);
- each beat moves to its best match within :data:`SHIFT_S` (normalised correlation over every lead:
  :func:`beatflow.dsp.templates.correlation_terms` per lead, summed), to a whole sample: its time stays on the
  record's sample grid, as the detector's and the annotators' do (at 128 Hz, times between samples read low-HRV
  records' rMSSD a quarter below the annotations', whose rounding adds to it).

Each lead is read and matched in a thread of its own (a ``signal.parquet`` lead is one reader, read from one
thread), a chunk at a time (at most :data:`CHUNK` beats within :data:`SPAN_S`, one stretch per lead: such a lead
reads only its row groups), at most :data:`AHEAD` chunks ahead of the one whose shifts are taken: host memory
does not grow with the record, however sparse its N beats.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import numpy as np

from beatflow.dsp.templates import correlation_terms, shift_of, spread, template

QRS_S = (-0.10, 0.12)
SHIFT_S = 0.08
TEMPLATE_BEATS = 512
CHUNK = 8192
SPAN_S = 4 * 3600.0
AHEAD = 2


def _chunks(peaks: np.ndarray, most_samples: int) -> list[slice]:
    """Consecutive runs of at most :data:`CHUNK` of ``peaks`` spanning at most ``most_samples``."""
    out, start = [], 0
    while start < len(peaks):
        end = min(start + CHUNK, int(np.searchsorted(peaks, peaks[start] + most_samples, "right")))
        out.append(slice(start, max(end, start + 1)))
        start = out[-1].stop
    return out


def _windows(leads: list, peaks: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``[beats, leads, hi - lo]`` float32: each lead's samples ``peak + lo`` to ``peak + hi`` (clipped to the
    lead; zeros for an empty lead), read as one stretch per lead."""
    out = []
    for x in leads:
        if len(x) == 0:
            out.append(np.zeros((len(peaks), hi - lo), np.float32))
            continue
        first = int(np.clip(peaks[0] + lo, 0, len(x) - 1))
        stretch = np.asarray(x[first : int(np.clip(peaks[-1] + hi, first + 1, len(x)))], dtype=np.float32)
        out.append(stretch[np.clip(peaks[:, None] + np.arange(lo, hi)[None, :] - first, 0, len(stretch) - 1)])
    return np.stack(out, 1)


def _lead_terms(x, peaks: np.ndarray, lo: int, hi: int, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One lead's correlation terms (:func:`beatflow.dsp.templates.correlation_terms`) for ``peaks``."""
    return correlation_terms(_windows([x], peaks, lo, hi), reference[None])


def aligned_times(time_s: np.ndarray, beats: np.ndarray, signal) -> np.ndarray:
    """``time_s`` with the beats ``beats`` (indices in time order, at least two) moved to their QRS's best match
    with the template (module docstring); ``signal``: a callable returning ``(lead name → lead, fs)``."""
    leads, fs = signal()
    leads = list(leads.values())
    peaks = np.round(np.asarray(time_s)[beats] * fs).astype(np.int64)
    lo, hi = round(QRS_S[0] * fs), round(QRS_S[1] * fs)
    pad = max(1, round(SHIFT_S * fs))
    chunks = _chunks(peaks, round(SPAN_S * fs))
    reference = template(_windows(leads, spread(peaks[chunks[0]], TEMPLATE_BEATS), lo - 2 * pad, hi + 2 * pad), pad)
    reference = reference[:, pad:-pad]
    out = np.array(time_s, dtype=np.float64)
    pending = deque()  # at most AHEAD chunks in flight

    def settle(part, futures):
        terms = [f.result() for f in futures]
        shift = shift_of(sum(t[0] for t in terms), sum(t[1] for t in terms), pad)
        out[beats[part]] = (peaks[part] + shift) / fs

    with ExitStack() as stack:
        threads = [stack.enter_context(ThreadPoolExecutor(max_workers=1)) for _ in leads]  # one reader each
        for part in chunks:
            futures = [
                thread.submit(_lead_terms, x, peaks[part], lo - pad, hi + pad, reference[k])
                for k, (x, thread) in enumerate(zip(leads, threads))
            ]
            pending.append((part, futures))
            if len(pending) > AHEAD:
                settle(*pending.popleft())
        while pending:
            settle(*pending.popleft())
    return out

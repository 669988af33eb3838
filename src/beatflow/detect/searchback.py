"""Search-back: a beat just below the detection threshold, found where the rhythm says one is missing.

Pan and Tompkins's detector (1985) searches back with half its threshold when no beat has come for 1.66 RR.
Here an interval between detected beats longer than ``segment.search_back`` × the local reference RR (the
veto's: the upper quartile of the intervals around it) is searched for local maxima of the detection envelope
(the NMS window's) between ``FLOOR`` × the threshold and the threshold, at least ``MARGIN`` × the reference (and
``min_rr_s``) from both ends, which keeps T waves out; the strongest one whose QRS correlates with the record's
median beat at ``SHAPE`` or more becomes a beat. A weak peak has less evidence of amplitude, so it needs more
of shape than the veto asks (0.9): noise peaks in pauses reached 0.91–0.93, the weak beats of MIT-BIH 208
0.97–0.99. Long intervals are searched again with the new beats, so a gap that hides two beats gets
both (at most ``MAX_PASSES`` passes). A ventricular beat is not beat-shaped and is never added this way, nor is
noise in a pause unless it looks like the record's beats.
"""

from __future__ import annotations

import numpy as np

MAX_PASSES = 4
FLOOR = 0.4  # × the threshold: the lowest peak searched for (Pan and Tompkins: 0.5)
SHAPE = 0.95  # weaker evidence of amplitude, so stronger of shape than the veto's 0.9
MARGIN = 0.5  # × the reference RR from either end of the interval: T waves out


def search_back(peaks: np.ndarray, envelope, band, s, backend) -> np.ndarray:
    """``peaks`` (host int64, increasing) with the beats found in their long intervals; ``envelope`` is the
    detection envelope and ``band`` the first lead's :func:`beatflow.detect.veto.qrs_band` (``xp`` arrays),
    ``s`` the :class:`beatflow.detect.params.SegmentSamples`."""
    from beatflow.detect.peaks import nms_mask
    from beatflow.detect.veto import qrs_correlation, reference_rr

    p, fs = s.p, s.fs
    if p.search_back <= 0 or peaks.shape[0] < 3:
        return peaks
    xp = backend.xp
    low = xp.flatnonzero(nms_mask(envelope, s.nms_half, backend, FLOOR * p.threshold))
    low = backend.to_host(low[envelope[low] < p.threshold])  # at or above it they were candidates already
    for _ in range(MAX_PASSES):
        reference = reference_rr(peaks, np.arange(1, peaks.shape[0]))  # of each interval
        margin = np.maximum(s.min_rr, MARGIN * reference)
        gap = np.clip(np.searchsorted(peaks, low) - 1, 0, peaks.shape[0] - 2)  # the interval each low peak is in
        inside = (np.diff(peaks) > p.search_back * reference)[gap]
        inside &= (low > peaks[gap] + margin[gap]) & (low < peaks[gap + 1] - margin[gap])
        if not inside.any():
            break
        union = np.union1d(peaks, low[inside])
        on = xp.asarray(union)
        shaped = backend.to_host(qrs_correlation(band, fs, on, envelope[on], xp)) >= SHAPE
        found = union[shaped & ~np.isin(union, peaks)]
        if not found.size:
            break
        strength = backend.to_host(envelope[xp.asarray(found)])
        interval = np.searchsorted(peaks, found)
        order = np.lexsort((-strength, interval))  # by interval, strongest first
        first_of_interval = np.r_[True, np.diff(interval[order]) != 0]
        peaks = np.union1d(peaks, found[order][first_of_interval])
    return peaks

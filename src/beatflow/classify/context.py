"""The rhythm context of the beat classes: rules over the trees' classes (:func:`beatflow.classify.model.decide`)
that see a whole run or episode, where the trees see one beat and its neighbours.

1. *Supraventricular runs* (:func:`supraventricular_runs`). The RR series is cut into stretches wherever an
   interval differs from the one before by more than :data:`ONSET` (15 %): the sudden-onset criterion of
   tachycardia discrimination (Swerdlow et al., JACC 1994: an interval below a programmed share, some 80–90 %,
   of those before it starts a tachycardia; sinus tachycardia speeds up and slows down gradually). A stretch of
   at least :data:`~beatflow.holter.af.RUN_BEATS` beats whose intervals are, on geometric average, at most
   ``1 − ONSET`` of the :data:`~beatflow.classify.features.LOCAL_BEATS` intervals on either side of it, begun by a
   beat the trees class S and holding none they class V, is a supraventricular tachycardia: its N beats are S
   (the MIT-BIH annotators label every beat of such a run S). The trees judge each beat against its local
   rhythm, which a run of tens of beats becomes, so they see the run's first beat only. An ectopic beat or a
   false detection inside a run cuts it (its short interval, then its pause); where, within
   :data:`RESUME_BEATS` beats of which one at least is not N, a stretch resumes at the run's own interval
   (within ``ONSET``), the run goes on (a premature beat does not end a tachycardia), though the resumed
   stretch is no faster than the run around it and its first beat, after the pause, is not premature.
2. *Atrial fibrillation or flutter* (:func:`in_atrial_fibrillation`): inside an episode found by
   :func:`beatflow.holter.af.detect_af` on the classes, irregularity is not prematurity, so an S beat is N
   (Teijeiro et al. 2018).

A beat a rule moves between N and S keeps as ``class_p`` the probability that it is N or S.
"""

from __future__ import annotations

import numpy as np

from beatflow.classify.features import LOCAL_BEATS
from beatflow.holter.af import RUN_BEATS, detect_af

ONSET = 0.15  # an interval this much shorter or longer than the one before starts a new stretch
RESUME_BEATS = 2  # a run goes on after at most this many beats that are not N (an ectopic beat, an extra detection)


def stretches(time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ends, ratio, rr_s)``: the stretches of beats at ``time_s`` (beat indices, ``ends`` exclusive)
    between sudden changes of the RR interval, each stretch's intervals over those of the
    :data:`~beatflow.classify.features.LOCAL_BEATS` beats on either side, and its own interval (geometric
    means). The first beat takes the second's interval."""
    log_rr = np.log(np.maximum(np.diff(time_s), 1e-6))
    log_rr = np.r_[log_rr[:1], log_rr]
    n = len(log_rr)
    starts = np.flatnonzero(np.r_[True, np.abs(np.diff(log_rr)) > -np.log(1 - ONSET)])
    ends = np.r_[starts[1:], n]
    total = np.r_[0.0, np.cumsum(log_rr)]
    inside = (total[ends] - total[starts]) / (ends - starts)
    before, after = np.maximum(starts - LOCAL_BEATS, 0), np.minimum(ends + LOCAL_BEATS, n)
    around_n = (starts - before) + (after - ends)
    around = ((total[starts] - total[before]) + (total[after] - total[ends])) / np.maximum(around_n, 1)
    return starts, ends, np.exp(inside - np.where(around_n > 0, around, inside)), np.exp(inside)


def supraventricular_runs(time_s: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 1 of the module docstring turns from N to S."""
    out = np.zeros(len(cls), bool)
    if len(cls) < RUN_BEATS:
        return out
    last_end, last_rr = -(10**9), np.nan  # the last run's end (beat index, exclusive) and its interval (s)
    for start, end, ratio, rr in zip(*stretches(time_s), strict=True):
        run, between = cls[start:end], cls[max(last_end, 0) : start]
        onset = end - start >= RUN_BEATS and ratio <= 1 - ONSET and run[0] == "S"
        resumed = (
            0 < start - last_end <= RESUME_BEATS
            and (between != "N").any()
            and abs(np.log(rr / last_rr)) <= -np.log(1 - ONSET)
        )
        if (onset or resumed) and not (run == "V").any():
            out[start:end] = run == "N"
            last_end, last_rr = end, rr
    return out


def in_atrial_fibrillation(time_s: np.ndarray, cls: np.ndarray, signal=None) -> np.ndarray:
    """Which beats (a boolean mask) rule 2 of the module docstring turns from S to N; ``signal``: a callable
    returning ``(leads, fs)`` for the episodes' P-wave check."""
    out = np.zeros(len(cls), bool)
    for start, end in detect_af(time_s, cls, signal=signal):
        out |= (time_s >= start) & (time_s <= end) & (cls == "S")
    return out

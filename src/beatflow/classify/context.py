"""The rhythm context of the beat classes: rules over the trees' classes (:func:`beatflow.classify.model.decide`)
that see a whole run or episode, where the trees see one beat and its neighbours.

1. *Ventricular bigeminy* (:func:`conducted_in_bigeminy`). In bigeminy every other beat is premature and the beat
   after its compensatory pause is conducted from the atria (Langendorf, Pick and Winternitz, Circulation
   11:422–430, 1955: the long cycle brings on the next premature beat). Where the trees class a whole bigeminal
   stretch V — the conducted beats aberrant or in a bundle-branch block that the record's sinus template does not
   show, or only some of them — the beats at the end of a pause (an interval more than :data:`ONSET` longer than
   both around it), every other beat, :data:`CONDUCTED_BEATS` (two: the fewest that can share a shape) or more
   in a row, each two with a beat classed V between them, are N when their shape differs from that of the beats
   between them (by :data:`~beatflow.classify.features.FAMILY_SAME` in a
   :data:`~beatflow.classify.features.FAMILY_BY` median) and the pause is compensatory (its median more than
   ``ONSET`` longer than the NN intervals of the ``2 × LOCAL_BEATS`` beats on either side of the stretch, or
   where there are none, than the record's): two alternating shapes at alternating intervals, the long one a
   pause, are a premature focus and the conducted rhythm, not a ventricular run, which keeps its rate or, where
   its cycle alternates (MIT-BIH 223), is faster than the sinus rhythm around it. Where the trees class some of
   those beats N, or where the chain is shorter than :data:`BIGEMINY_BEATS` (a late middle beat of a ventricular
   triplet and the conducted beat after it also make a chain of two), a beat classed V among them is N only where
   its QRS (:data:`QRS_BY`, each within ``FAMILY_SAME``) is that of another of them, or is nearer their median
   than that of the beats between them in most of the figures that part the two, and in none a shape of its own
   (:func:`nearer_the_chain`, the nearest family median): the conducted beats of one bigeminy share a shape
   (MIT-BIH 207's, unlike the record's sinus template), one of which may move in one figure towards the premature
   beats' (207's amplitude), while the middle beat of a ventricular triplet after the pause, a shape of its own,
   stays V (MIT-BIH 223's multiform beats). A single such beat between two V beats
   (:func:`conducted_between_ventricular`) is N on its P wave or its QRS instead: at the end of an
   interval more than ``ONSET`` longer than both around it, after a P wave of the sinus shape (correlation at
   least :data:`~beatflow.classify.fusion.P_WAVE`, read as in rule 6) by :data:`CONTRAST` more than either
   neighbour's, or ending a pause (at least ``1 − ONSET`` of the sustained rhythm's interval,
   ``rr_pre_sustained``) with a QRS that correlates with the sinus template by ``CONTRAST`` more than either
   neighbour's, it is the sinus beat of a ventricular bigeminy or after a ventricular beat's compensatory pause,
   not the middle beat of a ventricular triplet, whose beats show no sinus P wave of their own, come at the
   run's fast cycle, and whose middle interval alone cannot part the two. The other
   way round (:func:`premature_between_ventricular`), a chain of beats classed N or S, every other beat, each
   between two V beats at the end of an interval more than ``ONSET`` shorter than both around it and without a
   P wave of the sinus shape, are V: so soon after a ventricular beat, with no P wave, a beat is not conducted,
   and the chain is a ventricular run whose cycle alternates (MIT-BIH 223's VT), not bigeminy, whose conducted
   beats end the long interval.
   The same pattern in a stretch the trees class N or S (:func:`wide_in_bigeminy`): a chain of premature beats
   whose QRS is wider, by :data:`~beatflow.classify.features.FAMILY_SAME` or more in the median log width ratio,
   than that of the beats between them, and to which the trees give V a probability of :data:`IN_DOUBT` or more,
   is ventricular bigeminy, V (a premature beat with a wide QRS, every other beat; MIT-BIH 223's bigeminy, whose
   QRS is 35–50 % wider and of much the sinus shape, trees fitted on svdb class S at P(V) 0.3). Where the trees
   rule V out, a wide premature beat every other beat is an aberrated atrial one (MIT-BIH 201, P(V) 0.01).
2. *Atrial bigeminy* (:func:`premature_in_bigeminy`). Where atrial premature beats alternate with sinus beats,
   half of the local rhythm the trees judge each beat against is premature, and the premature beats no longer
   look it: in a stretch of beats classed N or S, the beats at the end of an interval more than ``ONSET``
   shorter than both around it, every other beat, :data:`BIGEMINY_BEATS` or more in a row, are S (the pattern is
   the evidence; its short cycle is the ectopic beat). Inside AF they are N again (rule 4), and an AF episode
   has no such pattern (:func:`beatflow.holter.af.pattern_ratio`).
3. *Supraventricular runs* (:func:`supraventricular_runs`). The RR series is cut into stretches wherever an
   interval differs from the one before by more than :data:`ONSET` (15 %): the sudden-onset criterion of
   tachycardia discrimination (Swerdlow et al., JACC 1994: an interval below a programmed share, some 80–90 %, of
   those before it starts a tachycardia; sinus tachycardia speeds up and slows down gradually); a beat the trees
   class V is a stretch of its own. A stretch is *fast* when its intervals are, on geometric average, at most
   ``1 − ONSET`` of the :data:`~beatflow.classify.features.LOCAL_BEATS` intervals on either side of it, and
   consecutive fast stretches are one (:func:`fast_chains`: a tachycardia's cycle may warm up, in steps over
   15 %). A fast stretch of at least :data:`~beatflow.holter.af.RUN_BEATS` beats (a *sudden* stretch), begun by a
   beat the trees class S or right after a stretch of one such beat (the premature beat that starts a tachycardia
   is coupled at an interval of its own), is a supraventricular tachycardia: its N beats are S (the MIT-BIH
   annotators label every beat of such a run S). The trees judge each beat against its local rhythm, which a run
   of tens of beats becomes, so they see the run's first beat only. An ectopic beat or a false detection inside a
   run cuts it (its short interval, then its pause); where, after at most :data:`RESUME_BEATS` beats, not N but for
   one at most (the beat that ends their pause, a stretch of its own where the pause is long), a stretch
   resumes at the run's own interval (within ``ONSET``), the run goes on (a premature beat, or a ventricular
   couplet, does not end a tachycardia), though the resumed stretch is no faster than the run around it and its
   first beat, after the pause, is not premature. So does a stretch of ``RUN_BEATS`` or more beats at the run's
   own interval that keeps its phase (:func:`in_phase`): its first beat a whole number of cycles (the geometric
   mean of the run's interval and its own), within ``ONSET`` of one, after the run's last, right after it or
   after at most ``RESUME_BEATS`` beats of any class. A tachycardia whose beats keep coming on its cycle has
   not stopped: in noise, the beats between are false detections and beats a burst moved or hid, whatever
   their class, and the interval that starts a new stretch is the burst's, not the rhythm's. A *sustained* run
   (``LOCAL_BEATS`` beats or more) that stops *recurs* where a sudden stretch starts within :data:`RECUR_S` of its
   end at its own interval (within ``ONSET``), whatever the trees give its first beat: a re-entrant or focal
   tachycardia that starts again keeps its cycle length, and once it is the record's rhythm its first beat is no
   longer premature against the beats around it.
4. *Atrial fibrillation or flutter* (:func:`in_atrial_fibrillation`): inside an episode found by
   :func:`beatflow.holter.af.detect_af` on the classes, irregularity is not prematurity, so an S beat is N
   (Teijeiro et al. 2018). So is each beat of a run of :data:`~beatflow.holter.af.RUN_BEATS` or more beats
   classed V whose every QRS is as narrow as the sinus template's (``qrs_width_ratio``, a log ratio, within
   :data:`~beatflow.classify.features.FAMILY_SAME` of 0): an impulse of ventricular origin spreads outside the
   His–Purkinje system and widens the QRS, and in AF, where the rhythm gives no prematurity to read, the QRS
   parts ectopy from conduction (Marriott and Sandler, Prog Cardiovasc Dis 9:18–28, 1966); the fibrillatory
   baseline and the changing rate move a conducted beat's shape and amplitude, not its width. Those runs'
   episodes are found with their beats read N, since a ventricular run ends AF; the S beats' with the classes
   as they are.

5. *Supraventricular beats on time* (:func:`supraventricular_on_time`). A supraventricular ectopic beat is
   premature (AAMI EC57's S class: atrial and junctional premature beats; escape beats and ectopic atrial rhythm
   are N). Beats classed S, fewer than :data:`~beatflow.holter.af.RUN_BEATS` in a row, the first of them on time
   (its interval within :data:`~beatflow.classify.fusion.ON_TIME` of the local median and of the interval
   before), are N where they come on time: where noise hides the P wave and moves the shape figures, the trees
   class sinus beats S (MIT-BIH 122 with the suite's heavy noise: 131 of them). Runs are left to rule 3 (a
   tachycardia that recurs starts on time).
6. *Conducted with another shape* (:func:`conducted_aberrant`). A beat the trees class V that comes on time (its
   interval before within :data:`~beatflow.classify.fusion.ON_TIME` of the local median) after a P wave that
   reads as the sinus one (correlation with the sinus template's P wave, as recorded or with the previous beat's
   T wave taken out, at least :data:`SINUS_P`), in a shape family that as a whole comes on time after the sinus
   P wave, is conducted from the atria with a bundle-branch block or aberrancy, and N (Marriott's criteria: a
   wide QRS at the sinus beat's time and PR interval is conducted; a ventricular beat is early or has no P wave
   of its own before it, and a late one that falls after the sinus P does not make a family of such beats); the
   trees, trained on records with few intermittent bundle-branch beats, class such beats by their shape. The
   rule runs after the fusion rule, which takes the on-time beats whose QRS mixes the sinus and ventricular
   shapes.
7. *Interpolated ventricular beats* (:func:`interpolated`). A ventricular premature beat that does not reach the
   sinus node leaves the sinus rhythm undisturbed: the sinus beat after it comes one sinus cycle (the local
   median interval) after the one before it, within ``ONSET`` (the PR interval after an interpolated beat
   lengthens: concealed conduction into the AV node), and the rhythm goes on at its cycle; an atrial premature
   beat resets the sinus node and is seldom interpolated. Between a beat classed N on time (within
   :data:`~beatflow.classify.fusion.ON_TIME` of the local median) and such a sinus beat, followed by a beat on
   time, a premature beat (more than ``ONSET`` early) classed N or S whose QRS correlates with the sinus template
   less, by :data:`~beatflow.classify.features.FAMILY_SAME` or more, than the beats around it is V, and the beat
   after an interpolated V beat is N, not S: the trees see both beats early against the local rhythm and the
   first with a QRS only partly unlike the sinus one.

A beat a rule moves to or between N and S keeps as ``class_p`` the probability that it is N or S; a beat a rule
makes V, the probability the trees give V.
"""

from __future__ import annotations

import numpy as np

from beatflow.classify.features import LOCAL_BEATS
from beatflow.holter.af import RUN_BEATS, detect_af

ONSET = 0.15  # an interval this much shorter or longer than the one before starts a new stretch
RESUME_BEATS = 3  # a run goes on after at most this many beats: not N (ectopic, extra detections) but for one
RECUR_S = 30.0  # a sustained run that stops and starts again within this, at its own interval, is the same run
BIGEMINY_BEATS = 3  # beats after a pause, or premature, every other beat, that make a stretch bigeminy
CONDUCTED_BEATS = 2  # rule 1's chain: the fewest late beats, every other beat, that can share a shape
QRS_BY = ("qrs_corr_mean", "qrs_amp_mean", "qrs_width_ratio")  # the QRS's figures of FAMILY_BY
CONTRAST = 0.3  # a conducted beat's P wave or QRS reads this much more like the sinus one's than a V neighbour's
IN_DOUBT = 0.2  # wide_in_bigeminy overturns the trees' N or S only where they give V at least this probability
SINUS_P = 0.8  # a P wave this alike to the sinus template's reads as the sinus one (median record's sinus beats: 0.84)
ONSET_STEP = float(-np.log(1 - ONSET))  # ONSET as a step of log RR (either way)


def stretches(time_s: np.ndarray, cls: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ends, ratio, rr_s)``: the stretches of beats at ``time_s`` (beat indices, ``ends`` exclusive)
    between sudden changes of the RR interval, each beat ``cls`` gives V a stretch of its own; each stretch's
    intervals over those of the :data:`~beatflow.classify.features.LOCAL_BEATS` beats on either side, and its own
    interval (geometric means). The first beat takes the second's interval."""
    log_rr = beat_log_rr(time_s)
    log_rr = np.r_[log_rr[1:2], log_rr[1:]]
    n = len(log_rr)
    v = cls == "V"
    starts = np.flatnonzero(np.r_[True, np.abs(np.diff(log_rr)) > ONSET_STEP] | v | np.r_[False, v[:-1]])
    ends = np.r_[starts[1:], n]
    total = np.r_[0.0, np.cumsum(log_rr)]
    inside = (total[ends] - total[starts]) / (ends - starts)
    before, after = np.maximum(starts - LOCAL_BEATS, 0), np.minimum(ends + LOCAL_BEATS, n)
    around_n = (starts - before) + (after - ends)
    around = ((total[starts] - total[before]) + (total[after] - total[ends])) / np.maximum(around_n, 1)
    return starts, ends, np.exp(inside - np.where(around_n > 0, around, inside)), np.exp(inside)


def fast_chains(time_s: np.ndarray, cls: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`stretches` with each row of consecutive fast ones (intervals at most ``1 − ONSET`` of those
    around them; not a V beat) merged into one: a tachycardia whose first beat is coupled at an interval of
    its own, or whose cycle warms up, is one run. A merged stretch's ratio is its parts' largest, its interval
    their geometric mean."""
    starts, ends, ratios, rrs = stretches(time_s, cls)
    fast = (ratios <= 1 - ONSET) & (cls[starts] != "V")
    first = np.flatnonzero(~(fast & np.r_[False, fast[:-1]]))  # the stretches that begin a chain
    last = np.r_[first[1:], len(starts)] - 1
    beats = ends - starts
    log_rr = np.r_[0.0, np.cumsum(np.log(rrs) * beats)]
    total = np.r_[0, np.cumsum(beats)]
    mean_rr = np.exp((log_rr[last + 1] - log_rr[first]) / (total[last + 1] - total[first]))
    return starts[first], ends[last], np.maximum.reduceat(ratios, first), mean_rr


def in_phase(span_s: float, cycle_s: float) -> bool:
    """Whether a rhythm of cycle ``cycle_s`` goes on across ``span_s`` (from its last beat to the next stretch's
    first): a whole number of cycles, within ``ONSET`` of one."""
    cycles = span_s / cycle_s
    return bool(round(cycles) >= 1 and abs(cycles - round(cycles)) <= ONSET)


def supraventricular_runs(time_s: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 3 of the module docstring turns from N to S."""
    out = np.zeros(len(cls), bool)
    if len(cls) < RUN_BEATS:
        return out
    last_end, last_rr, last_beats = -(10**9), np.nan, 0  # the last run's end (beat index, exclusive), interval, length
    starts, ends, ratios, rrs = fast_chains(time_s, cls)
    lone = np.r_[False, (ends - starts == 1)[:-1]]  # the stretch before is one beat
    for start, end, ratio, rr, after_one in zip(starts, ends, ratios, rrs, lone, strict=True):
        run, between = cls[start:end], cls[max(last_end, 0) : start]
        begun = run[0] == "S" or (after_one and cls[start - 1] == "S")
        sudden = end - start >= RUN_BEATS and ratio <= 1 - ONSET
        own_rate = last_beats > 0 and abs(np.log(rr / last_rr)) <= ONSET_STEP
        near = own_rate and 0 <= start - last_end <= RESUME_BEATS  # only where few: the last run may lie far back
        resumed = near and (
            (between != "N").sum() >= max(len(between) - 1, 1)  # the beats between not N but for one
            or (end - start >= RUN_BEATS and in_phase(time_s[start] - time_s[last_end - 1], np.sqrt(rr * last_rr)))
        )
        recurs = sudden and own_rate and last_beats >= LOCAL_BEATS and time_s[start] - time_s[last_end - 1] <= RECUR_S
        if ((sudden and begun) or resumed or recurs) and run[0] != "V":
            out[start:end] = run == "N"
            last_beats = last_beats + end - start if resumed else end - start
            last_end, last_rr = end, rr
    return out


def beat_log_rr(time_s: np.ndarray) -> np.ndarray:
    """Per beat, the log of the interval it ends (s; NaN for the first beat)."""
    return np.r_[np.nan, np.log(np.maximum(np.diff(time_s), 1e-6))]


def early_and_late(log_rr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per beat, whether the interval it ends (:func:`beat_log_rr`) is more than ``ONSET`` shorter than both the one
    before it and the one after it (a premature beat), and whether it is more than ``ONSET`` longer than both (the
    beat after a pause); False where either neighbour is missing."""
    before, after = log_rr - np.r_[np.nan, log_rr[:-1]], log_rr - np.r_[log_rr[1:], np.nan]
    with np.errstate(invalid="ignore"):
        return (before < -ONSET_STEP) & (after < -ONSET_STEP), (before > ONSET_STEP) & (after > ONSET_STEP)


def alternate_chains(stretch: np.ndarray, marked: np.ndarray, least: int = BIGEMINY_BEATS):
    """Each chain (beat indices) of at least ``least`` ``marked`` beats, every other beat of a stretch of
    ``stretch`` beats, with that stretch's first and end (exclusive) beat."""
    from beatflow.holter.quality import runs_of

    spans = np.array(runs_of(stretch), dtype=np.int64).reshape(-1, 2)
    marks = np.r_[0, np.cumsum(marked)]
    room = (spans[:, 1] - spans[:, 0] >= 2 * least - 1) & (marks[spans[:, 1]] - marks[spans[:, 0]] >= least)
    for start, end in spans[room].tolist():  # the stretches that can hold a chain
        for first in (start, start + 1):
            beats = np.arange(first, end, 2)
            for a, b in runs_of(marked[beats]):
                if b - a >= least:
                    yield beats[a:b], start, end


def conducted_in_bigeminy(time_s: np.ndarray, cls: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 1 of the module docstring turns from V to N: over the beats classed V and
    the beats at the end of an interval longer by more than ``ONSET`` than those on both sides of it between two
    beats classed V, a chain (:func:`alternate_chains`) of :data:`CONDUCTED_BEATS` or more such late beats, each
    two with a beat classed V between them, the interval they end longer by more than ``ONSET`` than the NN
    intervals around the stretch (the record's where there are none), and their shapes (the
    :data:`~beatflow.classify.features.FAMILY_BY` medians) differing from those of the beats between them by
    :data:`~beatflow.classify.features.FAMILY_SAME` or more in some figure: the chain's beats classed V, all where
    it holds no other class and :data:`BIGEMINY_BEATS` or more beats, else those whose :data:`QRS_BY` figures are
    each within ``FAMILY_SAME`` of another chain beat's or that are the chain's by :func:`nearer_the_chain`.
    ``features``: the beats' :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import FAMILY_BY, FAMILY_SAME, column
    from beatflow.holter.quality import runs_of

    out = np.zeros(len(cls), bool)
    log_rr = beat_log_rr(time_s)
    _, late = early_and_late(log_rr)
    nn = np.r_[False, (cls[1:] == "N") & (cls[:-1] == "N")]  # beats that end an NN interval
    ventricular = cls == "V"
    figures = np.nan_to_num(np.column_stack([column(features, name) for name in FAMILY_BY]))
    qrs_columns = [FAMILY_BY.index(name) for name in QRS_BY]
    qrs = figures[:, qrs_columns]

    for whole, start, end in alternate_chains(ventricular | (late & flanked(ventricular)), late, CONDUCTED_BEATS):
        for first, last in runs_of(ventricular[whole[:-1] + 1]):  # the links with a V beat between (end exclusive)
            chain = whole[first : last + 1]
            if len(chain) < CONDUCTED_BEATS:
                continue
            between = np.median(figures[chain[:-1] + 1], 0)
            apart = np.abs(np.median(figures[chain], 0) - between)
            around = np.r_[max(start - 2 * LOCAL_BEATS, 0) : start, end : min(end + 2 * LOCAL_BEATS, len(cls))]
            sinus = log_rr[around[nn[around]]]
            sinus = sinus if len(sinus) else log_rr[nn]  # none near: the record's
            compensatory = len(sinus) > 0 and np.median(log_rr[chain]) - np.median(sinus) > ONSET_STEP
            if not ((apart >= FAMILY_SAME).any() and compensatory):
                continue
            alike = nearest_other(qrs[chain]) < FAMILY_SAME
            nearer = nearer_the_chain(qrs[chain], between[qrs_columns])
            whole_v = ventricular[chain].all() and len(chain) >= BIGEMINY_BEATS  # two must share a shape
            out[chain] = ventricular[chain] & (alike | nearer | whole_v)
    return out


def nearest_other(points: np.ndarray) -> np.ndarray:
    """Per row of ``points`` ``[n, d]`` (n ≥ 2), the largest figure difference (Chebyshev distance) to the nearest
    other row: scipy's k-d tree, O(n log n) where a bigeminy lasts hours."""
    from scipy.spatial import cKDTree

    distance, _ = cKDTree(points).query(points, k=2, p=np.inf)
    return distance[:, 1]


def leave_one_out_median(x: np.ndarray) -> np.ndarray:
    """Per row of ``x`` ``[n, d]`` (n ≥ 2), the column medians of the other rows (one sort, not n medians)."""
    n = len(x)
    order = np.argsort(x, 0, kind="stable")
    ranked = np.take_along_axis(x, order, 0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n)[:, None], order.shape), 0)

    def remaining(position: int) -> np.ndarray:  # the value at ``position`` of each row's others, sorted
        return np.where(position < rank, ranked[position], ranked[position + 1])

    return (remaining((n - 2) // 2) + remaining((n - 1) // 2)) / 2


def nearer_the_chain(chain_qrs: np.ndarray, between_qrs: np.ndarray) -> np.ndarray:
    """Per beat of a bigeminal chain (rows of :data:`QRS_BY` figures), whether its QRS is the chain's by the nearer
    family median: nearer the median of the chain's other beats than ``between_qrs`` (the median of the beats
    between them) in most of the figures in which those two medians differ by
    :data:`~beatflow.classify.features.FAMILY_SAME` or more, and within ``FAMILY_SAME`` of one of them in every
    figure (no shape of its own)."""
    from beatflow.classify.features import FAMILY_SAME

    others = leave_one_out_median(chain_qrs)
    own, between = np.abs(chain_qrs - others), np.abs(chain_qrs - between_qrs)
    parting = np.abs(others - between_qrs) >= FAMILY_SAME
    votes = ((own < between) & parting).sum(1)
    return (2 * votes > parting.sum(1)) & (np.fmin(own, between) < FAMILY_SAME).all(1)


def flanked(mask: np.ndarray) -> np.ndarray:
    """Which beats have a beat of ``mask`` on both sides."""
    return np.r_[False, mask[:-1]] & np.r_[mask[1:], False]


def sinus_p_wave(features: np.ndarray) -> np.ndarray:
    """Per beat, how much its P wave reads as the sinus one: the larger of its correlation with the sinus
    template's P wave as recorded (``p_corr_mean``) and with the previous beat's T wave taken out
    (``p_alone_corr``: at fast rates the subtraction leaves some of the T wave)."""
    from beatflow.classify.features import column

    return np.fmax(column(features, "p_corr_mean"), column(features, "p_alone_corr"))


def conducted_between_ventricular(time_s: np.ndarray, cls: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 1's single-beat case turns from V to N: classed V between two beats
    classed V, at the end of an interval more than ``ONSET`` longer than both around it, after a P wave
    (:func:`sinus_p_wave`) of at least :data:`~beatflow.classify.fusion.P_WAVE` and :data:`CONTRAST` above both
    neighbours', or with ``rr_pre_sustained`` at least ``1 − ONSET`` and a ``qrs_corr_mean`` ``CONTRAST`` above
    both neighbours'. ``features``: the beats' :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import column
    from beatflow.classify.fusion import P_WAVE

    _, late = early_and_late(beat_log_rr(time_s))
    ventricular = cls == "V"
    between = ventricular & flanked(ventricular) & late
    p_wave, qrs = sinus_p_wave(features), column(features, "qrs_corr_mean")
    with np.errstate(invalid="ignore"):
        on_p_wave = (p_wave >= P_WAVE) & (contrast(p_wave) >= CONTRAST)
        on_qrs = ends_pause(late, features) & (contrast(qrs) >= CONTRAST)
    return between & (on_p_wave | on_qrs)


def ends_pause(late: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Which of the ``late`` beats (:func:`early_and_late`) end a pause: an interval at least ``1 − ONSET`` of the
    sustained rhythm's (``rr_pre_sustained``), not a beat of a fast ventricular run whose cycle alternates.
    ``features``: the beats' :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import column

    with np.errstate(invalid="ignore"):
        return late & (column(features, "rr_pre_sustained") >= 1 - ONSET)


def contrast(x: np.ndarray) -> np.ndarray:
    """Per beat, how much its figure ``x`` exceeds the larger of its neighbours' (the one neighbour at either end)."""
    return x - np.fmax(np.r_[np.nan, x[:-1]], np.r_[x[1:], np.nan])


def premature_between_ventricular(time_s: np.ndarray, cls: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 1's alternating case turns from N or S to V: a chain
    (:func:`alternate_chains`) of beats classed N or S, each between two beats classed V, at the end of an
    interval more than ``ONSET`` shorter than both around it, after no P wave of the sinus shape
    (:func:`sinus_p_wave` below :data:`~beatflow.classify.fusion.P_WAVE`). ``features``: the beats'
    :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.fusion import P_WAVE

    early, _ = early_and_late(beat_log_rr(time_s))
    with np.errstate(invalid="ignore"):
        marked = np.isin(cls, ("N", "S")) & flanked(cls == "V") & early & ~(sinus_p_wave(features) >= P_WAVE)
    out = np.zeros(len(cls), bool)
    for chain, _, _ in alternate_chains(np.ones(len(cls), bool), marked):
        out[chain] = True
    return out


def wide_in_bigeminy(time_s: np.ndarray, cls: np.ndarray, features: np.ndarray, p_v: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 1's wide case turns from N or S to V: in a stretch of beats classed N
    or S, a chain (:func:`alternate_chains`) of beats each at the end of an interval more than ``ONSET`` shorter
    than both around it, whose median ``qrs_width_ratio`` exceeds that of the beats between them by
    :data:`~beatflow.classify.features.FAMILY_SAME` or more and whose median probability of V (``p_v``) is at
    least :data:`IN_DOUBT`. ``features``: the beats' :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import FAMILY_SAME, column

    early, _ = early_and_late(beat_log_rr(time_s))
    width = np.nan_to_num(column(features, "qrs_width_ratio"))
    out = np.zeros(len(cls), bool)
    for chain, _, _ in alternate_chains(np.isin(cls, ("N", "S")), early):
        wider = np.median(width[chain]) - np.median(width[chain[:-1] + 1]) >= FAMILY_SAME
        out[chain] = wider and np.median(p_v[chain]) >= IN_DOUBT
    return out


def premature_in_bigeminy(time_s: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 2 of the module docstring turns from N to S: in a stretch of beats
    classed N or S, the N beats of a chain (:func:`alternate_chains`) of beats each at the end of an interval
    shorter by more than ``ONSET`` than the intervals on both sides of it."""
    early, _ = early_and_late(beat_log_rr(time_s))
    out = np.zeros(len(cls), bool)
    for chain, _, _ in alternate_chains(np.isin(cls, ("N", "S")), early):
        out[chain] = cls[chain] == "N"
    return out


def in_atrial_fibrillation(time_s: np.ndarray, cls: np.ndarray, features: np.ndarray, signal=None) -> np.ndarray:
    """Which beats (a boolean mask) rule 4 of the module docstring turns from S or V to N: the beats classed S
    inside an AF episode (:func:`~beatflow.holter.af.detect_af` on the classes), and every beat of each narrow
    run (:func:`narrow_ventricular_runs`) that an episode found with those runs' beats read N holds whole;
    ``signal``: a callable returning ``(leads, fs)`` for the episodes' P-wave check. ``features``: the beats'
    :data:`~beatflow.classify.features.NAMES`."""
    out = np.zeros(len(cls), bool)
    for first_s, last_s in detect_af(time_s, cls, signal=signal):
        out |= (time_s >= first_s) & (time_s <= last_s) & (cls == "S")
    runs = narrow_ventricular_runs(cls, features)
    if runs:
        in_runs = np.zeros(len(cls), bool)
        for start, end in runs:
            in_runs[start:end] = True
        for first_s, last_s in detect_af(time_s, np.where(in_runs, "N", cls), signal=signal):
            inside = (time_s >= first_s) & (time_s <= last_s)
            for start, end in runs:
                out[start:end] |= inside[start:end].all()
    return out


def narrow_ventricular_runs(cls: np.ndarray, features: np.ndarray) -> list[tuple[int, int]]:
    """The runs (first beat, end beat exclusive) of :data:`~beatflow.holter.af.RUN_BEATS` or more beats classed V
    whose every QRS is as wide as the sinus template's within :data:`~beatflow.classify.features.FAMILY_SAME`
    (``qrs_width_ratio``, a log ratio; an unknown width is not narrow). ``features``: the beats'
    :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import FAMILY_SAME, column
    from beatflow.holter.quality import runs_of

    with np.errstate(invalid="ignore"):
        narrow = np.abs(column(features, "qrs_width_ratio")) < FAMILY_SAME
    return [(s, e) for s, e in runs_of(cls == "V") if e - s >= RUN_BEATS and narrow[s:e].all()]


def supraventricular_on_time(cls: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 5 of the module docstring turns from S to N. ``features``: the beats'
    :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import column
    from beatflow.classify.fusion import on_time
    from beatflow.holter.quality import runs_of

    timely = on_time(column(features, "rr_pre_local")) & on_time(column(features, "rr_pre_prev"))
    out = np.zeros(len(cls), bool)
    for start, end in runs_of(cls == "S"):
        if end - start < RUN_BEATS and timely[start]:
            out[start:end] = timely[start:end]
    return out


def conducted_aberrant(cls: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Which beats (a boolean mask) rule 6 of the module docstring turns from V to N: classed V, on time after a
    P wave of the sinus shape (:func:`sinus_p_wave` at least :data:`SINUS_P`), their family too (its median
    prematurity and P-wave correlation). ``features``: the beats' :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import column
    from beatflow.classify.fusion import on_time

    with np.errstate(invalid="ignore"):
        beat = on_time(column(features, "rr_pre_local")) & (sinus_p_wave(features) >= SINUS_P)
        family = on_time(column(features, "family_rr_pre_local")) & (column(features, "family_p_corr") >= SINUS_P)
    return (cls == "V") & beat & family


def interpolated(time_s: np.ndarray, cls: np.ndarray, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which beats (boolean masks) rule 7 of the module docstring turns from N or S to V, and from S to N (the
    sinus beats after interpolated V beats). ``features``: the beats' :data:`~beatflow.classify.features.NAMES`."""
    from beatflow.classify.features import FAMILY_SAME, column
    from beatflow.classify.fusion import on_time

    n = len(cls)
    ventricular, sinus = np.zeros(n, bool), np.zeros(n, bool)
    local = column(features, "rr_pre_local")
    with np.errstate(invalid="ignore", divide="ignore"):
        cycle = np.r_[np.nan, np.diff(time_s)] / local  # the local median interval at each beat
        beat = np.arange(1, n - 2)
        span = (time_s[beat + 1] - time_s[beat - 1]) / cycle[beat - 1]
        found = beat[
            (cls[beat - 1] == "N")
            & on_time(local[beat - 1])
            & (local[beat] < 1 - ONSET)
            & (np.abs(span - 1) <= ONSET)
            & on_time(local[beat + 2])
        ]
        unlike = column(features, "qrs_corr_contrast")[found] <= -FAMILY_SAME
    ventricular[found[np.isin(cls[found], ("N", "S")) & unlike]] = True
    after = found[(ventricular[found] | (cls[found] == "V")) & (cls[found + 1] == "S")] + 1
    sinus[after] = True
    return ventricular, sinus

"""score: per-beat anomaly score from shape (the VAE's latent space) and timing (RR intervals)
→ ``scores.parquet`` (every detected beat) and ``latent.parquet`` (held-out beats).

Both parts are ratios to their own threshold in linear units (a beat halfway to a threshold scores 0.5); the
score is the largest of the two and their joint evidence ``(morphology + rhythm) / sqrt(2)`` (:func:`combined`),
so ``score > 1`` means anomalous, ``reason`` names the larger part: ``morphology`` or ``rhythm`` (premature,
after a pause, or an interval from the previous beat outside ``[min_rr_s, max_rr_s]``; the thresholds widen with
the local RR spread in an irregular rhythm, :func:`rhythm_ratio`), and below 1 the two parts rank beats alike.

Morphology (:mod:`beatflow.score.morphology`) is where a beat's VAE latent mean (of its row with the padding filled
from the model's row template) lies relative to the training beats, over a chi-square threshold fitted to
them; the row is judged at its closest T-wave alignment, and the beat after an anomalous one with its head
(the previous beat's spill) from the template.

Each beat also gets an AAMI class and its probability ``class_p`` from the shipped beat classifier
(:mod:`beatflow.classify`: the record's leads and R peaks, on the device on the GPU backend), and each kept beat a
morphology family (:mod:`beatflow.score.families`, from the latent means and the rows' QRS complexes).
``anomaly`` is ``score > 1``, or a class ``S``, ``V`` or ``F``, or a kept beat unlike any family (family −1);
``reason`` names the larger part of the score either way.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from beatflow.params import FromConfig
from beatflow.score.quantiles import UPPER_QUARTILE, nearest_quantiles

log = logging.getLogger("beatflow")


IQR_TO_SD = 2 * 0.6744897501960817  # a Gaussian's interquartile range in standard deviations
TYPICAL_SHARE = 0.5  # typical beats: the more typical half by shape (ectopic beats, up to half of all, are not)


@dataclass(frozen=True)
class ScoreParams(FromConfig):
    """``score.*`` config keys. Each key's meaning and default: the config schema."""

    SECTION = "score"

    quantile: float
    premature: float
    pause: float
    rr_window: int
    spread_window: int
    batch_size: int


@dataclass(frozen=True)
class Timing:
    """Per beat, in log units of the interval since the previous beat (NaN where there is none): ``log_rr``,
    the ``reference`` (log of the local sinus RR; ``typical`` its estimate from typical intervals alone), and
    the thresholds of an early (``early_at``) and a late (``late_at``) interval, widened by the local RR spread
    in an irregular rhythm from their regular value (``regular_early_at``, a number)."""

    log_rr: np.ndarray
    reference: np.ndarray
    early_at: np.ndarray
    late_at: np.ndarray
    typical: np.ndarray
    regular_early_at: float

    @property
    def early(self) -> np.ndarray:
        """How early the beat is as a ratio to its threshold (> 1: premature)."""
        return (self.reference - self.log_rr) / self.early_at


def timing(peaks: np.ndarray, p: ScoreParams, morph: np.ndarray | None = None) -> Timing:
    """The interval since the previous beat against its local reference and thresholds (:func:`rhythm_ratio`
    says how both are made)."""
    from scipy.stats import norm

    rr = np.diff(peaks, prepend=np.nan).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(rr)
    finite = np.isfinite(x)
    typical = np.ones(len(rr), bool)
    if morph is not None and np.isfinite(morph).any():
        typical = np.nan_to_num(morph, nan=np.inf) <= np.nanquantile(morph, TYPICAL_SHARE)
    usable = typical & np.r_[False, typical[:-1]] & finite
    if not usable.any():
        usable = finite
    (surrounding,) = nearest_quantiles(x, finite, p.rr_window, (UPPER_QUARTILE,))
    (nearest_typical,) = nearest_quantiles(x, usable, p.rr_window, (UPPER_QUARTILE,))
    reference = (surrounding + nearest_typical) / 2
    low, high = nearest_quantiles(x, usable, p.spread_window, (1 - UPPER_QUARTILE, UPPER_QUARTILE))
    spread = np.nan_to_num((high - low) / IQR_TO_SD, nan=0.0)
    z = norm.ppf(p.quantile)
    return Timing(
        x,
        reference,
        np.maximum(math.log(1 / p.premature), z * spread),
        np.maximum(math.log(p.pause), z * spread),
        nearest_typical,
        math.log(1 / p.premature),
    )


def rhythm_ratio(
    peaks: np.ndarray,
    fs: float,
    min_rr_s: float,
    max_rr_s: float,
    p: ScoreParams,
    morph: np.ndarray | None = None,
    parts: Timing | None = None,
) -> np.ndarray:
    """Timing anomaly per beat as a ratio to its threshold (> 1: anomalous), from the interval since the
    previous beat: the beat that comes early or late is the anomalous one, not the beat before it.

    ``morph`` (per beat, NaN for pruned beats; None: every beat typical) picks the *typical* beats, those whose
    morphology ratio is at most the record's median; a *typical interval* joins two typical beats (neither end
    ectopic, so neither a premature beat's interval nor the pause after it).

    * Reference RR: the geometric mean of two estimates of the sinus interval, each the upper quartile of
      ``rr_window`` intervals (the sinus interval even in bigeminy, where half the intervals are short): of the
      surrounding intervals, which a run of premature beats (a supraventricular tachycardia) or frequent
      ectopics pull short, and of the nearest typical intervals, which hold the rhythm outside such a run but
      are pulled long where the shape follows the rate (faster beats look less typical). Their biases run in
      opposite directions; the geometric mean halves each.
    * Spread: the interquartile range of log RR over the ``spread_window`` nearest typical intervals, as a
      standard deviation. The thresholds ``premature`` and ``pause`` (log units) widen to the ``quantile`` of a
      normal law with that spread where it is larger: in an irregular rhythm (atrial fibrillation) an interval
      is early or late relative to the rhythm's own variability. Ectopic beats and their pauses are left out,
      so frequent ectopics (bigeminy) do not read as an irregular rhythm.
    * The beat that ends the pause after a premature beat is late only if the two intervals together are
      (their mean against the reference): a compensatory pause restores the sinus timing.

    ``parts``: the :func:`timing` of ``peaks`` already computed (then ``morph`` is not used).
    """
    t = timing(peaks, p, morph) if parts is None else parts
    rr = np.exp(t.log_rr)
    early = t.early
    late = (t.log_rr - t.reference) / t.late_at
    after_premature = np.r_[False, (early > 1)[:-1]]
    with np.errstate(invalid="ignore"):
        pair = np.log((rr + np.r_[np.nan, rr[:-1]]) / 2)
    late = np.where(after_premature, (pair - t.reference) / t.late_at, late)
    ratio = np.maximum(min_rr_s * fs / rr, rr / (max_rr_s * fs))
    out_of_range = np.where(ratio > 1, ratio, 0.0)
    return np.nan_to_num(np.fmax(np.fmax(early, late), out_of_range), nan=0.0)


def per_beat(morph_ratio: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The morphology ratio per beat from ``morph_ratio`` per kept beat (NaN for pruned beats)."""
    morph = np.full(len(kept), np.nan)
    morph[kept] = morph_ratio
    return morph


def combined(morph_ratio: np.ndarray, rhythm: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per beat: the morphology ratio (``morph_ratio`` is per kept beat; NaN for pruned ones) and the score, the
    largest of it, the ``rhythm`` ratio and their joint evidence ``(morph + rhythm) / sqrt(2)``.

    The joint term is Stouffer's sum of two independent z-scores in threshold units: a beat both somewhat
    premature and somewhat odd in shape (an ectopic beat whose shape the record's many ectopics made common)
    outranks one that is either alone. Pruned beats: the rhythm ratio."""
    morph = per_beat(morph_ratio, kept)
    joint = (morph + rhythm) / math.sqrt(2)
    return morph, np.fmax(np.fmax(morph, rhythm), joint)


def score_table(
    beats,
    fs: float,
    morph_ratio: np.ndarray,
    rhythm: np.ndarray,
    split: np.ndarray,
    beat_class: np.ndarray | None = None,
    family: np.ndarray | None = None,
    class_p: np.ndarray | None = None,
):
    """The ``scores.parquet`` table; ``morph_ratio`` and ``split`` are per kept beat, ``rhythm``, ``beat_class``,
    ``family`` and ``class_p`` per beat, in order (no classes: every kept beat ``N`` of family 0, pruned ones
    ``Q``, −1, each with ``class_p`` 1).
    A beat is an anomaly when its score passes 1, its class is ``S``, ``V`` or ``F``, or it is kept and its
    shape is unlike any family (family −1); ``reason`` names the larger part of the score."""
    import pandas as pd

    kept = beats.kept.to_numpy()
    if beat_class is None:
        beat_class = np.where(kept, "N", "Q")
        family = np.where(kept, 0, -1)
        class_p = np.ones(len(kept))
    morph, score = combined(morph_ratio, rhythm, kept)
    anomaly = (score > 1) | np.isin(beat_class, ("S", "V", "F")) | (kept & (family < 0))
    reason = np.where(~anomaly, "", np.where(np.nan_to_num(morph, nan=-1) >= rhythm, "morphology", "rhythm"))
    splits = np.full(len(beats), "pruned", dtype=object)
    splits[kept] = split
    return pd.DataFrame(
        {
            "beat": beats.beat.to_numpy(),
            "peak": beats.peak.to_numpy(),
            "time_s": beats.peak.to_numpy() / fs,
            "split": splits.astype(str),
            "score": score,
            "anomaly": anomaly,
            "reason": reason.astype(str),
            "class": np.asarray(beat_class).astype(str),
            "family": np.asarray(family, dtype=np.int64),
            "class_p": np.asarray(class_p, dtype=np.float64),
        }
    )


def _check_embedding(rows, hparams: dict, record: str, path) -> None:
    """Raise when the embedding's rows are not the model's shape (channels x samples)."""
    from beatflow.errors import BeatflowError

    if tuple(rows.shape[1:]) != (hparams["channels"], hparams["length"]):
        raise BeatflowError(
            f"embedding {tuple(rows.shape)} does not match the model "
            f"({hparams['channels']} channels x {hparams['length']} samples)",
            record=record,
            path=str(path),
        )


def _anomaly_ratios(model, hparams: dict, beats, fs: float, bounds: dict, x, train_rows, p: ScoreParams):
    """The morphology and rhythm ratios of the beats; a beat after an anomalous one is judged again with the
    template's head. Returns ``(judge, morph, latent, rhythm, after)``."""
    from beatflow.learn.model import peak_offset
    from beatflow.learn.train import stretch_pivot
    from beatflow.score.morphology import QRS_BEFORE_PEAK_S, Morphology, alignments, rows_after_anomalies

    judge = Morphology(model, stretch_pivot(beats, fs), alignments(hparams["warp"]), p.batch_size)
    latents = judge.latents(x)
    morph, latent = judge.fit(latents, train_rows, p.quantile).ratio(latents)
    kept, peaks = beats.kept.to_numpy(), beats.peak.to_numpy()
    parts = timing(peaks, p, per_beat(morph, kept))
    rhythm = rhythm_ratio(peaks, fs, bounds["min_rr_s"], bounds["max_rr_s"], p, parts=parts)
    after = rows_after_anomalies(combined(morph, rhythm, kept)[1] > 1, kept)
    if after.size:
        end = peak_offset(beats) - round(QRS_BEFORE_PEAK_S * fs)
        morph[after], latent[after] = judge.ratio_with_template_head(x, after, end)
    return judge, morph, latent, rhythm, after


def _latent_table(beats, test_rows, latent: np.ndarray, table):
    """The test beats' latent coordinates (``z0`` …) with their scores: ``latent.parquet``'s table."""
    import pandas as pd

    test_beats = beats.beat.to_numpy()[beats.kept.to_numpy()][test_rows]
    return pd.DataFrame(
        {
            "beat": test_beats,
            **{f"z{i}": latent[test_rows, i] for i in range(latent.shape[1])},
            "score": table.score.to_numpy()[test_beats],
        }
    )


def _log_scores(record: str, table, p: ScoreParams, judge, after: np.ndarray) -> None:
    """Log the record's classes and families, then its anomalies by reason."""
    counts = table[table.anomaly].reason.value_counts().to_dict()
    log.info(
        "score %s: classes %s, %d families",
        record,
        table["class"].value_counts().to_dict(),
        int(table.family.max()) + 1,
    )
    log.info(
        "score %s: %d beats, %d anomalous %s (morphology: threshold at quantile %g of the fitted chi-square "
        "law, alignments %s, %d beats after an anomalous one judged with the template's head)",
        record,
        len(table),
        int(table.anomaly.sum()),
        counts,
        p.quantile,
        judge.factors,
        after.size,
    )


def score(record: str, inputs: dict, outputs: dict, p: ScoreParams, backend) -> None:
    """Score one record's beats and write ``scores.parquet`` and ``latent.parquet``.

    The train/test split is the one ``model.pt`` was trained on (its ``train_fraction`` and ``seed``), the
    pruning bounds those ``beats.parquet`` was made with (its metadata).

    Parameters
    ----------
    record : str
        The record's name (for messages).
    inputs : dict
        ``signal``, ``beats``, ``embedding`` and ``model`` of the record.
    outputs : dict
        ``scores`` and ``latent``: the files to write.
    p : ScoreParams
        The ``score.*`` config keys.
    backend : Backend
        Where to compute (:func:`beatflow.backend.select_backend`).

    Raises
    ------
    BeatflowError
        When the embedding disagrees with the model or with ``beats.parquet``, or a file is unreadable.
    """
    import torch

    from beatflow.backend import torch_device
    from beatflow.classify.model import classify
    from beatflow.io import arrays
    from beatflow.io.tables import beats_parameters, read_frame, read_signal, signal_info, write_frame
    from beatflow.learn.model import load_model, peak_offset, split_indices
    from beatflow.learn.train import as_tensor, kept_lengths
    from beatflow.score.families import families

    fs, leads = signal_info(inputs["signal"])
    beats = read_frame(inputs["beats"], columns=["beat", "peak", "start", "length", "kept"])
    bounds = beats_parameters(inputs["beats"])
    device = torch_device(backend)
    model, hparams = load_model(inputs["model"], device)
    rows = arrays.load(inputs["embedding"], backend.gpu)
    lengths = torch.as_tensor(kept_lengths(beats, rows, record, inputs["embedding"]), device=device)
    _check_embedding(rows, hparams, record, inputs["embedding"])
    x = model.complete(as_tensor(rows, backend, device), lengths)
    train_rows, test_rows = split_indices(len(x), hparams["train_fraction"], hparams["seed"])
    split = np.full(len(x), "test", dtype=object)
    split[train_rows] = "train"
    judge, morph, latent, rhythm, after = _anomaly_ratios(model, hparams, beats, fs, bounds, x, train_rows, p)
    kept, peaks = beats.kept.to_numpy(), beats.peak.to_numpy()
    latent_z = (latent - judge.centre.cpu().numpy()) / judge.spread.cpu().numpy()
    family = np.full(len(beats), -1, dtype=np.int64)
    if kept.any():
        family[kept] = families(x, model.scale, peak_offset(beats), fs, latent_z, morph <= np.median(morph), backend.xp)
    signals, _ = read_signal(inputs["signal"], backend, leads[:2])
    beat_class, class_p = classify([signals[name] for name in leads[:2]], fs, peaks, xp=backend.xp, device=device)
    table = score_table(beats, fs, morph, rhythm, split, beat_class, family, class_p)
    write_frame(table, outputs["scores"], {"backend": backend.name, "device": backend.detail})
    write_frame(_latent_table(beats, test_rows, latent, table), outputs["latent"])
    _log_scores(record, table, p, judge, after)

"""The ``segment.*`` config keys (seconds) and their values in samples at one record's rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

from beatflow.params import FromConfig


@dataclass(frozen=True)
class SegmentParams(FromConfig):
    """``segment.*`` config keys; windows in seconds. Each key's meaning and default: the config schema."""

    SECTION = "segment"

    wavelet_width_s: float
    wide_wavelet_width_s: float
    nms_window_s: float
    min_rr_s: float
    max_rr_s: float
    threshold: float
    pre_peak_s: float
    veto_rr: float
    veto_correlation: float
    veto_strength: float
    veto_support: float
    fuse_leads: bool
    search_back: float
    both_polarities: bool
    adaptive: bool
    candidate_floor: float
    refractory_s: float
    lone_lead_veto: bool
    veto_recurring: bool

    @property
    def widths_s(self) -> tuple[float, ...]:
        """The Ricker widths the detector uses (a wide width of 0 turns the second one off)."""
        return (self.wavelet_width_s,) + ((self.wide_wavelet_width_s,) if self.wide_wavelet_width_s else ())

    def block(self, fs: float) -> int:
        """Samples in a reference block (``max_rr_s``: at least one beat in each)."""
        return max(1, math.ceil(self.max_rr_s * fs))

    def nms_half(self, fs: float) -> int:
        """Half the NMS window in samples."""
        return max(1, round(self.nms_window_s * fs / 2))

    def in_samples(self, fs: float) -> SegmentSamples:
        """These parameters at sampling rate ``fs`` (Hz), the windows converted to samples once."""
        return SegmentSamples(
            self,
            float(fs),
            nms_half=self.nms_half(fs),
            block=self.block(fs),
            pre_peak=round(self.pre_peak_s * fs),
            min_rr=self.min_rr_s * fs,
            max_rr=self.max_rr_s * fs,
        )


@dataclass(frozen=True)
class SegmentSamples:
    """:class:`SegmentParams` at one record's sampling rate ``fs``: the windows in samples, ``p`` for the
    dimensionless keys and the leaves that still take seconds.

    Attributes
    ----------
    nms_half : int
        Half the NMS window (``nms_window_s``).
    block : int
        A reference block (``max_rr_s``).
    pre_peak : int
        A beat window starts this many samples before its R peak (``pre_peak_s``).
    min_rr, max_rr : float
        The pruning bounds of a beat's length (``min_rr_s``, ``max_rr_s``).
    """

    p: SegmentParams
    fs: float
    nms_half: int
    block: int
    pre_peak: int
    min_rr: float
    max_rr: float

"""The ``segment.*`` config keys."""

from __future__ import annotations

import math
from dataclasses import dataclass

from beatflow.params import FromConfig


@dataclass(frozen=True)
class SegmentParams(FromConfig):
    """``segment.*`` config keys; windows in seconds."""

    wavelet_width_s: float = 0.015
    wide_wavelet_width_s: float = 0.03
    nms_window_s: float = 0.3
    min_rr_s: float = 0.25
    max_rr_s: float = 3.0
    threshold: float = 0.6
    pre_peak_s: float = 0.25
    veto_rr: float = 1.2
    veto_correlation: float = 0.9
    veto_strength: float = 1.2
    veto_support: float = 0.2
    fuse_leads: bool = True
    search_back: float = 0.0  # the rate-based search-back; the adaptive threshold has its own (Pan–Tompkins)
    both_polarities: bool = True  # the envelope is the wavelet responses' magnitude (False: oriented QRS-up)
    adaptive: bool = True  # Pan–Tompkins adaptive threshold (False: the fixed ``threshold``)
    candidate_floor: float = 0.125  # NMS peaks below this are not candidates: half of P–T's lowest threshold
    refractory_s: float = 0.2  # no second QRS within this (ventricular refractory period; Pan–Tompkins)
    lone_lead_veto: bool = True  # drop a peak next to a beat that the second lead shows and it does not
    veto_recurring: bool = True  # the noise veto spares a QRS shape that recurs in the record

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

"""embed: every kept beat, all leads as channels, band-passed (``embed.band_hz``: baseline wander and mains
hum out), mean-removed and zero-padded into a fixed-length row → ``embedding.npy`` ``[n_kept, channels, L]``
float32 (kvikio I/O on the GPU)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from beatflow.errors import BeatflowError
from beatflow.params import FromConfig

log = logging.getLogger("beatflow")


@dataclass(frozen=True)
class EmbedParams(FromConfig):
    """``embed.*`` config keys. Each key's meaning and default: the config schema."""

    SECTION = "embed"

    length_s: float
    band_hz: tuple[float, float]

    def __post_init__(self):
        object.__setattr__(self, "band_hz", tuple(float(f) for f in self.band_hz))  # YAML gives a list

    def width(self, fs: float) -> int:
        """The row length in samples at sampling rate ``fs``."""
        return max(1, round(self.length_s * fs))


def embed_beats(x, starts, lengths, width: int, backend):
    """``[beats, channels, width]`` rows from signal ``x`` ``[channels, n]`` (Numba kernel, CUDA or CPU)."""
    xp = backend.xp
    starts = xp.asarray(starts, dtype=xp.int64)
    lengths = xp.asarray(lengths, dtype=xp.int64)
    if backend.gpu:
        out = xp.empty((starts.shape[0], x.shape[0], width), dtype=xp.float32)
        from beatflow.embed.kernels_cuda import embed_cuda

        embed_cuda(x, starts, lengths, xp.empty(out.shape[:2]), out)
        return out
    from beatflow.embed.kernels import embed_cpu

    return embed_cpu(x, starts, lengths, width)


def check_band(band_hz, fs: float, n_samples: int, record: str, signal_path) -> None:
    """Raise a :class:`BeatflowError` unless ``embed.band_hz`` has low < high and a filter shorter than twice
    the recording (``n_samples`` at ``fs``)."""
    from beatflow.dsp.filters import band_pass_taps

    low, high = band_hz
    span = len(band_pass_taps(fs, low, high)) / fs
    if not low < high or span >= 2 * n_samples / fs:
        raise BeatflowError(
            f"embed.band_hz {list(band_hz)} needs low < high and a filter ({span:.1f} s) shorter "
            "than twice the recording",
            record=record,
            path=str(signal_path),
        )


def embed(record: str, inputs: dict, outputs: dict, p: EmbedParams, backend, work_bytes: int | None = None) -> None:
    """Embed the kept beats of one record and write ``embedding.npy``.

    Parameters
    ----------
    record : str
        The record's name (for messages).
    inputs : dict
        ``signal`` and ``beats``: its ``signal.parquet`` and ``beats.parquet``.
    outputs : dict
        ``embedding``: the ``embedding.npy`` to write.
    p : EmbedParams
        The ``embed.*`` config keys, converted to samples here at the signal's rate.
    backend : Backend
        Where to compute (:func:`beatflow.backend.select_backend`).
    work_bytes : int, optional
        Device memory the band-pass may use at once (None: chosen from the free memory).

    Raises
    ------
    BeatflowError
        When no beat is kept, the band is unusable for the recording, or the rows do not fit in memory.
    """
    from beatflow.dsp.filters import band_pass
    from beatflow.io import arrays
    from beatflow.io.tables import read_frame, read_signal

    signal_path, beats_path, band_hz = inputs["signal"], inputs["beats"], p.band_hz
    signals, fs = read_signal(signal_path, backend)
    beats = read_frame(beats_path, columns=["start", "length", "kept"])
    kept = beats[beats["kept"]]
    if kept.empty:
        raise BeatflowError(
            "no beat passed length pruning (check segment.min_rr_s / max_rr_s)", record=record, path=str(beats_path)
        )
    width = p.width(fs)
    check_band(band_hz, fs, next(iter(signals.values())).shape[0], record, signal_path)
    try:
        x = band_pass(list(signals.values()), fs, *band_hz, backend.xp, work_bytes)
        rows = embed_beats(x, kept["start"].to_numpy(), kept["length"].to_numpy(), width, backend)
    except MemoryError as exc:  # cupy's and RMM's out-of-memory errors are MemoryErrors
        gb = len(kept) * len(signals) * width * 4 / 1e9
        raise BeatflowError(
            f"out of {backend.name.upper()} memory embedding {len(kept)} beats x {len(signals)} "
            f"lead(s) x {width} samples ({gb:.3g} GB): reduce embed.length_s, or run this record "
            "with device: cpu or on a GPU with more memory",
            record=record,
            path=str(signal_path),
        ) from exc
    arrays.save(outputs["embedding"], rows, backend.gpu)
    log.info(
        "embed %s: %d beats x %d channel(s) x %d samples (%.2f s)",
        record,
        rows.shape[0],
        rows.shape[1],
        width,
        width / fs,
    )

"""embed: every kept beat, all leads as channels, band-passed (``embed.band_hz``: baseline wander and mains
hum out), mean-removed and zero-padded into a fixed-length row → ``embedding.npy`` ``[n_kept, channels, L]``
float32 (kvikio I/O on the GPU)."""

from __future__ import annotations

import logging

from beatflow.errors import BeatflowError

log = logging.getLogger("beatflow")


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


def embed(record: str, signal_path, beats_path, out_path, length_s: float, backend,
          band_hz: tuple[float, float] = (0.5, 40.0), work_bytes: int | None = None) -> None:
    """Embed the kept beats of one record and write ``embedding.npy``."""
    from beatflow.dsp.filters import band_pass, band_pass_taps
    from beatflow.io import arrays
    from beatflow.io.tables import read_frame, read_signal

    signals, fs = read_signal(signal_path, backend)
    beats = read_frame(beats_path, columns=["start", "length", "kept"])
    kept = beats[beats["kept"]]
    if kept.empty:
        raise BeatflowError("no beat passed length pruning (check segment.min_rr_s / max_rr_s)",
                            record=record, path=str(beats_path))
    width = max(1, round(length_s * fs))
    low, high = band_hz
    span = len(band_pass_taps(fs, low, high)) / fs
    if not low < high or span >= 2 * next(iter(signals.values())).shape[0] / fs:
        raise BeatflowError(f"embed.band_hz {list(band_hz)} needs low < high and a filter ({span:.1f} s) shorter "
                            "than twice the recording", record=record, path=str(signal_path))
    try:
        x = band_pass(list(signals.values()), fs, *band_hz, backend.xp, work_bytes)
        rows = embed_beats(x, kept["start"].to_numpy(), kept["length"].to_numpy(), width, backend)
    except MemoryError as exc:  # cupy's and RMM's out-of-memory errors are MemoryErrors
        gb = len(kept) * len(signals) * width * 4 / 1e9
        raise BeatflowError(f"out of {backend.name.upper()} memory embedding {len(kept)} beats x {len(signals)} "
                            f"lead(s) x {width} samples ({gb:.3g} GB): reduce embed.length_s, or run this record "
                            "with device: cpu or on a GPU with more memory", record=record,
                            path=str(signal_path)) from exc
    arrays.save(out_path, rows, backend.gpu)
    log.info("embed %s: %d beats x %d channel(s) x %d samples (%.2f s)", record, rows.shape[0], rows.shape[1],
             width, width / fs)

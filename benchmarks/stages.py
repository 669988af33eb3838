"""Warm, in-process figures for the stages of the seed's case, beside the issue's reference numbers.

    python -m benchmarks.stages data/holter20h.csv --out benchmarks/results/stages-h200.json [--device gpu]

Measures (best of ``--repeat`` after a warm-up, device synchronised): CSV parse (cuDF or pyarrow) in GB/s of
CSV; segment (``detect_peaks`` on the first lead, the second confirming as in the segment rule) + embed of all
leads (``band_pass`` over ``embed.band_hz`` + ``embed_beats``); the beats' classes as the score rule makes them
(``classify``: features, trees, then ``decide``'s rules over the trees' classes, fusion's signal reads included); a
2 GiB ``.npy`` read into device memory by kvikio and by ``np.load`` + ``cupy.asarray``, warm (page cache) and
cold (evicted with ``posix_fadvise``); and the VAE's seconds per epoch on ``--vae-beats`` beats (63.5 k).
Parameters are the config's (``config/config.yaml``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import band_hz, config, stage_params, write_json


def best(run, sync, repeat: int) -> float:
    """Best wall time of ``run()`` over ``repeat`` calls after one warm-up call."""
    run()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times)


def evict(path: Path) -> None:
    """Drop ``path`` from the page cache, so the next read comes from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def csv_parse(csv: Path, leads: list[str], backend, sync, repeat: int) -> dict:
    """beatflow's parse (float64, then leads rounded to float32) beside a plain float32 ``read_csv``."""
    from beatflow.io.ingest import read_source

    size = csv.stat().st_size
    seconds = best(lambda: read_source(csv, leads, backend.gpu), sync, repeat)
    out = {"csv_bytes": size, "seconds": seconds, "gb_per_s": size / seconds / 1e9}
    if backend.gpu:
        import cudf

        plain = best(lambda: cudf.read_csv(csv, dtype="float32"), sync, repeat)
        out.update(plain_cudf_float32_seconds=plain, plain_cudf_float32_gb_per_s=size / plain / 1e9)
    return out


def segment_embed(signals: dict, fs: float, peaks: np.ndarray, backend, sync, repeat: int) -> dict:
    """``detect_peaks`` and the embedding of the ``peaks`` it found, and the parts of each."""
    from beatflow.detect.envelope import (
        detection_envelope,
        per_block,
        polarity_and_reference,
        wavelet_responses,
    )
    from beatflow.detect.fusion import fused_envelope
    from beatflow.detect.peaks import lead_support, nms_mask
    from beatflow.detect.searchback import search_back
    from beatflow.detect.segment import beats_table, detect_peaks
    from beatflow.detect.veto import noise_veto, qrs_band
    from beatflow.dsp.filters import band_pass
    from beatflow.embed.rows import embed_beats

    p, hz = stage_params()[0], band_hz()
    leads = list(signals.values())
    first, second = leads[0], leads[1] if len(leads) > 1 else None
    kept = beats_table(peaks, first.shape[0], p.in_samples(fs)).query("kept")
    starts, lengths = kept.start.to_numpy(), kept.length.to_numpy()
    segment_s = best(lambda: detect_peaks(first, p.in_samples(fs), backend, second=second), sync, repeat)
    embed_s = best(
        lambda: embed_beats(band_pass(leads, fs, *hz, backend.xp), starts, lengths, round(fs), backend), sync, repeat
    )
    block = p.block(fs)
    r = wavelet_responses(first, fs, p.widths_s, backend.xp)[0]
    sign, reference = polarity_and_reference(r, block, backend.xp)
    scratch = r.copy()  # divided in place, over and over: only its time counts
    envelope = detection_envelope(first, p.in_samples(fs), backend.xp)
    candidates = backend.xp.flatnonzero(nms_mask(envelope, p.nms_half(fs), backend, p.threshold))
    filtered = band_pass(leads, fs, *hz, backend.xp)
    band = qrs_band(first, fs, backend.xp)
    parts = {  # where the time goes (polarity_and_reference and per_block_reference once per wavelet width)
        "wavelet_responses": lambda: wavelet_responses(first, fs, p.widths_s, backend.xp),
        "polarity_and_reference": lambda: polarity_and_reference(r, block, backend.xp),
        "per_block_reference": lambda: per_block(scratch, sign * reference, block),
        "nms_kernel": lambda: nms_mask(envelope, p.nms_half(fs), backend, p.threshold),
        "qrs_band": lambda: qrs_band(first, fs, backend.xp),
        "noise_veto": lambda: noise_veto(band, fs, candidates, envelope[candidates], p, backend),
        "search_back": lambda: search_back(peaks, envelope, band, p.in_samples(fs), backend),
        "band_pass_all_leads": lambda: band_pass(leads, fs, *hz, backend.xp),
        "embed_kernel": lambda: embed_beats(filtered, starts, lengths, round(fs), backend),
    }
    if second is not None:
        lead = detection_envelope(second, p.in_samples(fs), backend.xp, absolute=True)
        parts["second_lead_envelope"] = lambda: detection_envelope(second, p.in_samples(fs), backend.xp, absolute=True)
        parts["second_lead_support"] = lambda: lead_support(lead, fs, candidates, backend.xp)
        parts["fused_envelope"] = lambda: fused_envelope(envelope, lead, fs, backend.xp)
    return {
        "samples_per_lead": int(first.shape[0]),
        "leads": len(signals),
        "beats": len(peaks),
        "segment_s": segment_s,
        "embed_s": embed_s,
        "segment_plus_embed_s": segment_s + embed_s,
        "parts_s": {name: best(run, sync, repeat) for name, run in parts.items()},
    }


def classes(signals: dict, fs: float, peaks: np.ndarray, backend, sync, repeat: int) -> dict:
    """``classify`` on the first two leads at the detected ``peaks`` (host), and its three parts."""
    from beatflow.backend import torch_device
    from beatflow.classify.features import beat_features
    from beatflow.classify.model import classify, decide, probabilities, signal_of

    leads = list(signals.values())[:2]
    device = torch_device(backend)
    features = beat_features(leads, fs, peaks, backend.xp)
    prob = probabilities(features, device=device)
    parts = {
        "features": lambda: beat_features(leads, fs, peaks, backend.xp),
        "trees": lambda: probabilities(features, device=device),
        "rules": lambda: decide(prob, features, peaks / fs, signal_of(leads, fs)),
    }
    return {
        "beats": len(peaks),
        "classes_s": best(lambda: classify(leads, fs, peaks, xp=backend.xp, device=device), sync, repeat),
        "parts_s": {name: best(run, sync, repeat) for name, run in parts.items()},
    }


def npy_read(backend, sync, gib: float) -> dict:
    import cupy

    from beatflow.io import arrays

    rows = int(gib * 2**30 / (2 * 250 * 4))
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        path = Path(tmp) / "rows.npy"
        arrays.save(path, cupy.ones((rows, 2, 250), dtype=cupy.float32), gpu=True)
        readers = {"kvikio": lambda: arrays.load(path, gpu=True), "numpy_asarray": lambda: cupy.asarray(np.load(path))}
        out = {"bytes": path.stat().st_size}
        for name, read in readers.items():
            for state in ("cold", "warm"):
                if state == "cold":
                    evict(path)
                else:
                    read()
                sync()
                t0 = time.perf_counter()
                read()
                sync()
                out[f"{name}_{state}_gb_per_s"] = path.stat().st_size / (time.perf_counter() - t0) / 1e9
        out["io_mode"] = arrays.io_mode()
    return out


def vae_epoch(backend, beats: int, batch_size: int, sync, repeat: int) -> dict:
    """Seconds per epoch of the VAE on ``beats`` synthetic rows (the config's train section otherwise): the best
    of ``repeat`` fits of 6 epochs less the best of 1 epoch, over 5 (each after a warm-up fit: the CUDA context,
    cuDNN and the first graph stay outside the timing)."""
    import torch

    from beatflow.backend import torch_device
    from beatflow.learn.train import TrainParams, fit

    train = config()["train"]

    device = torch_device(backend)
    g = torch.Generator().manual_seed(0)
    t = torch.linspace(-1, 1, 250)
    x = (
        torch.exp(-(((t - 0.2 * torch.rand(beats, 2, 1, generator=g)) / 0.05) ** 2))
        + 0.05 * torch.randn(beats, 2, 250, generator=g)
    ).to(device)
    history = []

    def fitted(epochs: int) -> float:
        params = TrainParams.from_config({**train, "epochs": epochs, "batch_size": batch_size})

        def run():
            history[:] = fit(x, params, device)[1]

        return best(run, sync, repeat)

    one, six = fitted(1), fitted(6)
    return {
        "beats": beats,
        "batch_size": batch_size,
        "s_per_epoch": (six - one) / 5,
        "first_epoch_s": one,
        "final_loss": history[-1],
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", type=Path, help="the seed-scale CSV (beatflow-synth --hours 20)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[512])
    p.add_argument("--vae-beats", type=int, default=63_500, help="rows the VAE epochs are timed on")
    a = p.parse_args(argv)
    from beatflow.backend import select_backend
    from beatflow.detect.segment import detect_peaks
    from beatflow.io.ingest import TIME, csv_header, read_source, resolve_fs

    backend = select_backend(a.device, needs=("cudf", "kvikio", "numba.cuda", "torch"))
    sync = backend.xp.cuda.Device().synchronize if backend.gpu else (lambda: None)
    leads = [c for c in csv_header(a.csv) if c != TIME]
    signals, _, _ = read_source(a.csv, leads, backend.gpu)
    fs = resolve_fs(None, signals.pop(TIME), backend.xp)
    first, *rest = signals.values()
    peaks = detect_peaks(first, stage_params()[0].in_samples(fs), backend, second=rest[0] if rest else None)
    report = {
        "device": backend.detail,
        "csv": str(a.csv),
        "csv_parse": csv_parse(a.csv, leads, backend, sync, a.repeat),
        "segment_embed": segment_embed(signals, fs, peaks, backend, sync, a.repeat),
        "classes": classes(signals, fs, peaks, backend, sync, a.repeat),
        "vae": [vae_epoch(backend, a.vae_beats, b, sync, a.repeat) for b in a.batch_sizes],
    }
    if backend.gpu:
        report["npy_read_2gib"] = npy_read(backend, sync, 2.0)
    write_json(a.out, report)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

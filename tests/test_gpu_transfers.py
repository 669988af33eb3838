"""Zero-copy on the GPU path: from the signal on the device to the scores, no signal- or embedding-sized
array crosses to the host. Every device-to-host copy in the process (cuDF, CuPy, Numba, torch alike) is
recorded by CUPTI through torch's profiler; only scalars and beat-sized tables may cross."""

import json

import numpy as np
import pytest

from beatflow.detect.params import SegmentParams
from beatflow.detect.segment import detect_peaks

pytestmark = pytest.mark.gpu


def device_to_host_bytes(run, tmp_path) -> list[int]:
    """Sizes of the device-to-host copies made while ``run()`` runs."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    return [e["args"]["bytes"] for e in events if e.get("cat") == "gpu_memcpy" and "DtoH" in e.get("name", "")]


@pytest.fixture(scope="module")
def device_signal(short_record, gpu):
    """Both leads of the short record on the device, as the ingest artifact would give them."""
    from beatflow.synth import generate

    spec = short_record[2]
    leads, _, _ = generate(spec)
    return {name: gpu.xp.asarray(x) for name, x in leads.items()}, spec.fs


def test_the_profile_sees_a_bulk_copy(device_signal, tmp_path):
    signals, _ = device_signal
    x = signals["MLII"]
    assert max(device_to_host_bytes(lambda: x.get(), tmp_path)) == x.nbytes  # the check can fail


def test_signal_to_scores_copies_no_bulk_array_to_the_host(device_signal, gpu, tmp_path):
    import torch

    from beatflow.detect.segment import beats_table
    from beatflow.dsp.filters import band_pass
    from beatflow.embed.rows import embed_beats
    from beatflow.learn.model import split_indices
    from beatflow.learn.train import TrainParams, as_tensor, fit
    from beatflow.score.morphology import Morphology, alignments

    signals, fs = device_signal
    x = signals["MLII"]
    seen = {}

    def pipeline():
        peaks = detect_peaks(x, SegmentParams.defaults().in_samples(fs), gpu)  # host R-peak indices: beat-sized reads
        kept = beats_table(peaks, x.shape[0], SegmentParams.defaults().in_samples(fs)).query("kept")
        filtered = band_pass(list(signals.values()), fs, 0.5, 40.0, gpu.xp)
        rows = embed_beats(filtered, kept.start.to_numpy(), kept.length.to_numpy(), round(fs), gpu)
        tensor = as_tensor(rows, gpu, torch.device("cuda"))
        train_rows, _ = split_indices(len(rows), 0.75, 0)
        model, _ = fit(
            tensor[torch.as_tensor(train_rows, device="cuda")], TrainParams.defaults(epochs=2), torch.device("cuda")
        )
        judge = Morphology(model, round(0.35 * fs), alignments(0.3), 4096)
        latents = judge.latents(tensor)
        _, latent = judge.fit(latents, train_rows, 0.999).ratio(latents)
        seen.update(rows=rows, latent=latent, peaks=peaks)

    copies = device_to_host_bytes(pipeline, tmp_path)
    bulk = min(x.nbytes, seen["rows"].nbytes) // 4
    assert isinstance(seen["rows"], gpu.xp.ndarray)
    assert copies and max(copies) < bulk, f"device-to-host copies {sorted(copies)[-5:]} reach {bulk} bytes"
    assert max(copies) <= max(seen["latent"].nbytes, seen["peaks"].nbytes)  # the largest is a beat-sized table


def test_arrays_load_reads_straight_into_device_memory(gpu, tmp_path):
    from beatflow.io import arrays

    a = gpu.xp.arange(3 * 2 * 1000, dtype=gpu.xp.float32).reshape(3, 2, 1000)
    arrays.save(tmp_path / "a.npy", a, gpu=True)
    loaded = []
    assert not [
        b
        for b in device_to_host_bytes(lambda: loaded.append(arrays.load(tmp_path / "a.npy", True)), tmp_path)
        if b >= 1024
    ]
    assert isinstance(loaded[0], gpu.xp.ndarray)
    np.testing.assert_array_equal(loaded[0].get(), a.get())

"""``beats.atr`` (beatflow.holter.annotations): the file wfdb writes, byte for byte, and read back by wfdb."""

import numpy as np
import pytest
import wfdb

from beatflow.holter.annotations import annotation_arrays, encode, write_annotations


@pytest.mark.parametrize("fs", [128.0, 250.0, 360.0])
def test_the_file_is_wfdbs_byte_for_byte(tmp_path, fs):
    """Beats of every class (and one outside the AAMI classes), intervals beyond one annotation word (SKIP),
    AF episodes with odd- and even-length notes, a rhythm mark at a beat's sample: the same bytes as
    ``wfdb.wrann(..., fs=fs)``, and ``wfdb.rdann`` reads back the samples, symbols and notes."""
    rng = np.random.default_rng(int(fs))
    peaks = np.cumsum(rng.integers(40, 3000, 3000))
    classes = rng.choice(["N", "S", "V", "F", "Q", "X"], len(peaks))
    episodes = [
        {"start_s": peaks[10] / fs, "end_s": peaks[200] / fs},
        {"start_s": (peaks[300] + 1) / fs, "end_s": peaks[400] / fs},
    ]
    sample, symbol, aux = annotation_arrays(peaks, classes, episodes, fs)
    wfdb.wrann("ref", "atr", sample, symbol=list(symbol), aux_note=aux, fs=fs, write_dir=tmp_path)
    assert encode(sample, symbol, aux, fs) == (tmp_path / "ref.atr").read_bytes()
    write_annotations(peaks, classes, episodes, fs, tmp_path / "beats.atr")
    back = wfdb.rdann(str(tmp_path / "beats"), "atr")
    assert back.fs == fs and (back.sample == sample).all()
    assert (
        back.symbol == list(symbol) and symbol[0] != "+" and (symbol == "Q").sum() == np.isin(classes, ["Q", "X"]).sum()
    )
    assert [a for a in back.aux_note if a] == ["(AFIB", "(N", "(AFIB", "(N"]
    first = np.flatnonzero(sample == peaks[10])
    assert list(symbol[first]) == ["+", symbol[first[1]]] and symbol[first[1]] != "+"  # the mark before the beat


def test_a_record_without_beats_is_an_empty_annotation_file(tmp_path):
    write_annotations([], [], [], 250.0, tmp_path / "beats.atr")
    assert (tmp_path / "beats.atr").read_bytes() == b"\x00\x00"

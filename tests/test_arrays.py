import numpy as np
import pytest

from beatflow.errors import BeatflowError
from beatflow.io import arrays


def test_round_trip_and_header(tmp_path):
    a = np.random.default_rng(0).standard_normal((7, 2, 33)).astype(np.float32)
    arrays.save(tmp_path / "e.npy", a, gpu=False)
    np.testing.assert_array_equal(arrays.load(tmp_path / "e.npy", gpu=False), a)
    shape, dtype, offset = arrays.read_header(tmp_path / "e.npy")
    assert shape == (7, 2, 33) and dtype == np.float32 and offset % 64 == 0
    assert list(tmp_path.iterdir()) == [tmp_path / "e.npy"]  # no temporary left


def test_header_written_for_kvikio_matches_numpy(tmp_path):
    np.save(tmp_path / "ref.npy", np.zeros((5, 3, 8), np.float32))
    ref = (tmp_path / "ref.npy").read_bytes()
    assert arrays._header((5, 3, 8), np.float32) == ref[: len(ref) - 5 * 3 * 8 * 4]


def test_truncated_and_foreign_files_are_clear_errors(tmp_path):
    arrays.save(tmp_path / "e.npy", np.ones((10, 1, 4), np.float32), gpu=False)
    data = (tmp_path / "e.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-7])
    with pytest.raises(BeatflowError, match="truncated or corrupt"):
        arrays.load(tmp_path / "cut.npy", gpu=False)
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(BeatflowError, match="not a readable .npy"):
        arrays.load(tmp_path / "junk.npy", gpu=False)

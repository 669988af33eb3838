"""How the beat classes' rule 1 (:func:`beatflow.classify.context.conducted_in_bigeminy`) scales with the length of
a ventricular bigeminy, which on a Holter record may last hours.

    python -m benchmarks.bigeminy_scale --out benchmarks/results/bigeminy-scale-<date>.json

Per length (``--cycles``): sinus rhythm at 0.8 s, then that many cycles of bigeminy (a premature beat at 0.5 s,
the compensatory pause 1.1 s), every premature beat and every other conducted beat classed V, the conducted beats
of a QRS of their own with a little spread; the best of ``--repeat`` calls, the peak of the memory NumPy and
Python allocate in one (``tracemalloc``; the k-d tree's own C++ arrays, linear in the beats, are not traced), and
how many of the conducted beats classed V the rule makes N.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS, machine, today, write_json


def bigeminy(cycles: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(time_s, classes, features, conducted)`` of the module docstring's record (``conducted``: the beats after
    the pauses)."""
    from beatflow.classify.features import NAMES

    rng = np.random.default_rng(seed)
    rr = np.r_[np.full(60, 0.8), np.tile([0.5, 1.1], cycles), np.full(60, 0.8)]
    classes = np.full(len(rr), "N")
    classes[60 : 60 + 2 * cycles : 2] = "V"
    conducted = np.arange(61, 60 + 2 * cycles, 2)
    classes[conducted[::2]] = "V"
    features = np.zeros((len(rr), len(NAMES)), np.float32)
    features[conducted, NAMES.index("qrs_corr_mean")] = 0.5
    features[:, NAMES.index("qrs_amp_mean")] = rng.normal(0, 0.05, len(rr))
    return np.cumsum(rr), classes, features, conducted


def measure(cycles: int, repeat: int) -> dict:
    """The module docstring's figures for one length."""
    from beatflow.classify.context import conducted_in_bigeminy

    time_s, classes, features, conducted = bigeminy(cycles)
    seconds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        made_n = conducted_in_bigeminy(time_s, classes, features)
        seconds.append(time.perf_counter() - t0)
    tracemalloc.start()
    conducted_in_bigeminy(time_s, classes, features)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "cycles": cycles,
        "beats": len(time_s),
        "hours": round(float(time_s[-1]) / 3600, 2),
        "seconds": min(seconds),
        "peak_traced_mib": round(peak / 2**20, 1),
        "conducted_classed_v": int((classes[conducted] == "V").sum()),
        "made_n": int(made_n.sum()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, nargs="+", default=[1000, 4000, 16000, 48000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / f"bigeminy-scale-{today()}.json")
    args = parser.parse_args(argv)
    from beatflow.classify.context import nearest_other

    nearest_other(np.zeros((2, 1)))  # scipy's import outside the timings
    rows = [measure(cycles, args.repeat) for cycles in args.cycles]
    for row in rows:
        print(row)
    write_json(args.out, {"machine": machine(("numpy", "scipy")), "lengths": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""What a rule's process pays before its work: each library's import, the CUDA context, the RMM pool and the
Numba CUDA kernels' compilation (or their load from numba-cuda's on-disk cache), each measured in a fresh
interpreter, best of ``--repeat``; and, per rule, the set of imports that rule's ``select_backend`` call makes.

    python -m benchmarks.imports --out benchmarks/results/imports-h200-<date>.json [--steps numpy,torch]

A step whose library is not installed here is null.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from benchmarks.common import ROOT, write_json

STEPS = {  # name: (setup run first, untimed; the code timed)
    "numpy": ("", "import numpy"),
    "pyarrow.parquet": ("", "import pyarrow.parquet"),
    "pandas": ("", "import pandas"),
    "scipy.signal": ("", "import scipy.signal"),
    "numba": ("", "import numba"),
    "wfdb": ("", "import wfdb"),
    "cupy": ("", "import cupy"),
    "cuda_context": ("import cupy", "cupy.cuda.runtime.free(cupy.cuda.runtime.malloc(1))"),
    "numba.cuda": ("", "import numba.cuda"),
    "cudf": ("", "import cudf"),
    "rmm": ("", "import rmm"),
    "rmm_pool": (
        "import rmm, cupy; cupy.cuda.runtime.free(cupy.cuda.runtime.malloc(1))",
        "rmm.reinitialize(pool_allocator=True)",
    ),
    "kvikio": ("", "import kvikio"),
    "torch": ("", "import torch"),
    "torch_cuda_init": ("import torch", "torch.zeros(1, device='cuda')"),
    "holoviews_bokeh_matplotlib": ("", "import holoviews as hv; hv.extension('bokeh', 'matplotlib', logo=False)"),
    "nms_kernel_first_call": (
        (
            "import numpy, cupy; from beatflow.detect.nms_cuda import nms_cuda; r = cupy.random.rand(1000)."
            "astype(cupy.float32); out = cupy.empty(1000, dtype=cupy.bool_)"
        ),
        "nms_cuda(r, 5, out); cupy.cuda.Device().synchronize()",
    ),
    "embed_kernels_first_call": (
        (
            "import cupy; from beatflow.embed.kernels_cuda import embed_cuda; x = cupy.random.rand(2, 5000)."
            "astype(cupy.float32); s = cupy.arange(0, 4000, 250); n = cupy.full(s.shape, 250); "
            "m = cupy.empty((s.shape[0], 2)); out = cupy.empty((s.shape[0], 2, 250), dtype=cupy.float32)"
        ),
        "embed_cuda(x, s, n, m, out); cupy.cuda.Device().synchronize()",
    ),
}
RULES = {  # the needs each rule script passes to select_backend (scripts/*.py)
    "ingest": ("cudf",),
    "segment": ("numba.cuda",),
    "embed": ("kvikio", "numba.cuda"),
    "train": ("kvikio", "torch"),
    "score": ("kvikio", "torch"),
}


def timed(setup: str, code: str) -> float | None:
    program = f"import time\n{setup}\nt0 = time.perf_counter()\n{code}\nprint(time.perf_counter() - t0)"
    out = subprocess.run([sys.executable, "-c", program], check=False, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:  # the library is not installed here
        return None
    return float(out.stdout.strip().splitlines()[-1])


def best(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return min(values) if values else None


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--steps", help=f"comma-separated steps (default: all of {', '.join(STEPS)})")
    p.add_argument("--rules", help=f"comma-separated rules (default: all of {', '.join(RULES)})")
    a = p.parse_args(argv)
    steps, rules = (a.steps or ",".join(STEPS)).split(","), (a.rules or ",".join(RULES)).split(",")
    unknown = sorted(set(steps) - set(STEPS)) + sorted(set(rules) - set(RULES))
    if unknown:
        raise SystemExit(f"unknown steps or rules: {unknown}")
    seconds = {name: best([timed(*STEPS[name]) for _ in range(a.repeat)]) for name in steps}
    per_rule = {
        rule: timed(
            "import logging",
            f"from beatflow.backend import select_backend; select_backend('gpu', needs={RULES[rule]!r})",
        )
        for rule in rules
    }
    result = {"python": sys.version.split()[0], "seconds": seconds, "select_backend_s_per_rule": per_rule}
    write_json(a.out, result, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

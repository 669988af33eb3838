"""Write artifacts under a temporary name and rename them into place, so a killed job leaves nothing
that looks complete; the next write of the artifact removes what a killed writer left."""

import contextlib
import os
import re
from pathlib import Path

from beatflow.errors import BeatflowError, is_disk_full


def temporary_path(path: Path, pid: int) -> Path:
    """The name process ``pid`` writes ``path`` under: hidden, beside it."""
    return path.with_name(f".{path.stem}.{pid}.tmp{path.suffix}")


def sweep_stale(path: Path) -> list[Path]:
    """Remove the temporary files of ``path`` that other processes left (a writer killed mid-write; Snakemake
    runs one job per output at a time, so none is being written); returns them."""
    own = re.compile(rf"\.{re.escape(path.stem)}\.\d+\.tmp{re.escape(path.suffix)}")
    stale = [f for f in path.parent.glob(f".{path.stem}.*.tmp*") if own.fullmatch(f.name)]
    for f in stale:
        f.unlink(missing_ok=True)
    return stale


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success rename it to ``path``, on error remove it. A full disk
    is a :class:`BeatflowError` saying so."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(path)
    tmp = temporary_path(path, os.getpid())
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        if is_disk_full(exc):
            raise BeatflowError(f"no space left on device while writing it ({exc})", path=str(path)) from exc
        raise
    finally:
        tmp.unlink(missing_ok=True)

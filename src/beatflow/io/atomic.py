"""Write artifacts under a temporary name and rename them into place, so a killed job leaves nothing
that looks complete."""

import contextlib
import os
import threading
from pathlib import Path

_RENAMING = threading.Lock()  # held while a temporary file is renamed into place
_PENDING: set[Path] = set()  # temporary files of this process not yet renamed or removed


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success rename it to ``path``, on error remove it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    with _RENAMING:
        _PENDING.add(tmp)
    try:
        yield tmp
        with _RENAMING:
            os.replace(tmp, path)
    finally:
        with _RENAMING:
            tmp.unlink(missing_ok=True)
            _PENDING.discard(tmp)


def abandon_pending() -> list[Path]:
    """Remove this process's temporary files and block every later rename, for a process about to exit
    while another thread may still be writing (a warm worker whose job was cancelled). Returns what it removed."""
    _RENAMING.acquire()  # never released: no artifact is renamed into place after this
    removed = sorted(_PENDING)
    for tmp in removed:
        tmp.unlink(missing_ok=True)
    return removed

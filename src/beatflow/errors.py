"""Errors that reach the user: each names the record, the file and the problem, on one line."""

import errno
import gzip
import zlib

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class BeatflowError(Exception):
    """A problem with the user's input or environment, stated so that it can be fixed (on one line: a
    library's multi-line message is joined with "; ")."""

    def __init__(self, problem: str, record: str | None = None, path: str | None = None):
        problem = "; ".join(line.strip() for line in problem.splitlines() if line.strip())
        self.problem, self.record, self.path = problem, record, path
        where = ", ".join(p for p in (f"record {record!r}" if record else "", f"file {path}" if path else "") if p)
        super().__init__(f"{where}: {problem}" if where else problem)


class BackendError(BeatflowError):
    """The requested compute backend cannot be used."""


def is_disk_full(exc: BaseException) -> bool:
    """An OSError of a full disk or quota, or numpy's short write ("N requested and M written")."""
    return isinstance(exc, OSError) and (exc.errno in DISK_FULL or "requested and" in str(exc))


def read_failure(exc: BaseException) -> str:
    """Why reading a file failed, in words: a library's exception as a user can act on it."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (it holds the byte 0x{exc.object[exc.start]:02x})"
    if isinstance(exc, gzip.BadGzipFile):
        return "not a gzip file, although its name ends in .gz"
    if isinstance(exc, EOFError):
        return "truncated (the compressed data ends early)"
    if isinstance(exc, zlib.error):
        return f"corrupt compressed data ({exc})"
    if is_disk_full(exc):
        return "no space left on device"
    return f"{type(exc).__name__}: {exc}"

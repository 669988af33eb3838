"""Errors that reach the user: each names the record, the file and the problem."""


class BeatflowError(Exception):
    """A problem with the user's input or environment, stated so that it can be fixed."""

    def __init__(self, problem: str, record: str | None = None, path: str | None = None):
        self.problem, self.record, self.path = problem, record, path
        where = ", ".join(p for p in (f"record {record!r}" if record else "", f"file {path}" if path else "") if p)
        super().__init__(f"{where}: {problem}" if where else problem)


class BackendError(BeatflowError):
    """The requested compute backend cannot be used."""

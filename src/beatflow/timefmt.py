"""Times as users read them in messages and figure titles."""


def clock(seconds: float) -> str:
    """``HH:MM:SS`` from the start of the recording."""
    s = int(seconds)
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"

"""What the stage parameter dataclasses share: each is built from its config section, never from defaults of
its own (the schema holds them, :mod:`beatflow.config`)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar


class FromConfig:
    """Mixin for a dataclass of one config section (named by ``SECTION``)."""

    SECTION: ClassVar[str]

    @classmethod
    def from_config(cls, section: dict):
        """The parameters from a validated config section (every field present; unknown keys ignored).

        Raises
        ------
        KeyError
            When the section lacks one of the fields (a config that was not validated).
        """
        return cls(**{f.name: section[f.name] for f in dataclasses.fields(cls)})

    @classmethod
    def defaults(cls, **overrides):
        """The parameters at the schema's defaults (:func:`beatflow.config.defaults`), ``overrides`` replacing
        some of them: for code that runs a stage outside Snakemake."""
        from beatflow.config import defaults

        return cls.from_config({**defaults()[cls.SECTION], **overrides})

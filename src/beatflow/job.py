"""A rule's job as plain data: its files, parameters, wildcards, log, config and threads.

Built from Snakemake's ``snakemake`` object in the rule's script, and sent as JSON to the warm worker
(:mod:`beatflow.worker`), so that a stage runs the same whichever process runs it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import Any


@dataclass(frozen=True)
class Files:
    """The part of Snakemake's ``Namedlist`` the rules use: positional files, and named ones (a name may hold
    a list, as ``expand()`` gives)."""

    files: list[str] = field(default_factory=list)
    named: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str):
        try:
            return self.named[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, index: int) -> str:
        return self.files[index]

    def __iter__(self):
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def items(self):
        return self.named.items()

    @classmethod
    def from_namedlist(cls, namedlist) -> Files:
        named = {name: (list(value) if isinstance(value, list) else value) for name, value in namedlist.items()}
        return cls([str(f) for f in namedlist], named)


@dataclass(frozen=True)
class Job:
    """One job of one rule."""

    rule: str
    wildcards: dict[str, str]
    input: Files
    output: Files
    log: Files
    params: dict[str, Any]
    config: dict[str, Any]
    threads: int = 1
    gpus: int = 0  # the rule's ``resources: gpu``

    @property
    def record(self) -> str:
        return self.wildcards.get("record", "")

    @property
    def par(self) -> SimpleNamespace:
        """The rule's ``params:``, by attribute (``job.par.segment``)."""
        return SimpleNamespace(**self.params)

    @property
    def device(self) -> str:
        return self.config.get("device", "auto")

    @classmethod
    def from_snakemake(cls, smk) -> Job:
        return cls(
            rule=smk.rule,
            wildcards=dict(smk.wildcards.items()),
            input=Files.from_namedlist(smk.input),
            output=Files.from_namedlist(smk.output),
            log=Files.from_namedlist(smk.log),
            params={name: _plain(value) for name, value in smk.params.items()},
            config=_plain(smk.config),
            threads=int(smk.threads),
            gpus=int(getattr(getattr(smk, "resources", None), "gpu", 0) or 0),
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Job:
        return cls(**{**data, **{key: Files(**data[key]) for key in ("input", "output", "log")}})


def _plain(value):
    """``value`` as JSON types (Snakemake hands tuples and its own dict and list types to scripts)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value

"""What the stage parameter dataclasses share."""


class FromConfig:
    """Mixin for a dataclass of one config section: build it from that section, ignoring unknown keys."""

    @classmethod
    def from_config(cls, section: dict):
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})

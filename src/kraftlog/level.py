"""Protocol levels: cumulative behaviour switches, like Kafka's ``metadata.version``.

| level     | adds                                                                      | Kafka |
|-----------|---------------------------------------------------------------------------|-------|
| classic   | KIP-497 AlterPartition + KIP-320 leader-epoch fencing                     | 3.4   |
| kip903    | broker epochs in Fetch ReplicaState / AlterPartition v3, INELIGIBLE_REPLICA | 3.5   |
| elr       | KIP-966 part 1: strict min-ISR HWM, ELR, clean-shutdown detection         | 4.1   |
| urm       | KIP-966 part 2: Unclean Recovery Manager                                  | none  |

Only the levels listed in :data:`IMPLEMENTED` are accepted by the CLI and the scenario runner;
the default is always the highest implemented level.
"""

from __future__ import annotations

from enum import IntEnum


class Level(IntEnum):
    """Cumulative protocol level; compare with ``>=`` (``level >= Level.KIP903``)."""

    CLASSIC = 0
    KIP903 = 1
    ELR = 2
    URM = 3

    @property
    def label(self) -> str:
        """The lower-case name used on the command line and in scenario files."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Level:
        """Parse ``classic``/``kip903``/``elr``/``urm``.

        Raises ValueError naming the implemented levels when ``text`` is unknown or not implemented.
        """
        for level in IMPLEMENTED:
            if level.label == str(text).strip().lower():
                return level
        names = ", ".join(level.label for level in IMPLEMENTED)
        raise ValueError(f"unknown or unimplemented level {text!r} (implemented: {names})")


#: Levels implemented so far, lowest first.
IMPLEMENTED: tuple[Level, ...] = (Level.CLASSIC, Level.KIP903, Level.ELR, Level.URM)

#: The default level: the highest implemented one.
DEFAULT: Level = IMPLEMENTED[-1]

"""Option parsing shared by the command-line modules (``kraftlog.cli``, ``kraftlog.net.cli``)."""

from __future__ import annotations

import click

from .protocol.level import Level


def level_option(ctx, param, value) -> Level | None:
    """click callback for ``--level``: a Level, None when not given; a clear usage error (exit 2) for a
    name that is not an implemented level."""
    if value is None:
        return None
    try:
        return Level.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None

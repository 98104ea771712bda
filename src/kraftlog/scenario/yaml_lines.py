"""YAML with line numbers, for the scenario parser: a SafeLoader whose mappings and sequences remember the
1-based line of themselves, of each key and of each value (so an error names the line), and which refuses
duplicate mapping keys (a typo never passes silently). Errors are :class:`~kraftlog.scenario.ScenarioError`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import yaml

from .model import ScenarioError, _show

__all__ = ["LDict", "LList", "load_yaml"]


class LDict(dict[object, object]):
    """A YAML mapping that remembers 1-based lines: its own, each key's and each value's."""

    __slots__ = ("line", "key_lines", "lines")
    line: int
    key_lines: dict[object, int]
    lines: dict[object, int]

    def key_line(self, key: object) -> int:
        """The line of ``key``, or the mapping's own when it has no such key."""
        return self.key_lines.get(key, self.line)

    def value_line(self, key: object) -> int:
        """The line of ``key``'s value, or the mapping's own when it has no such key."""
        return self.lines.get(key, self.line)


class LList(list[object]):
    """A YAML sequence that remembers 1-based lines: its own and each item's."""

    __slots__ = ("line", "lines")
    line: int
    lines: list[int]

    def item_line(self, index: int) -> int:
        """The line of item ``index``, or the sequence's own past its end."""
        return self.lines[index] if index < len(self.lines) else self.line


class _Loader(yaml.SafeLoader):
    """SafeLoader building :class:`LDict`/:class:`LList` and refusing duplicate keys."""

    source = "<string>"


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[LDict]:
    data = LDict()
    data.line = node.start_mark.line + 1
    data.key_lines = {}
    data.lines = {}
    yield data
    seen: dict[Hashable, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if not isinstance(key, Hashable):
            raise ScenarioError(f"a mapping key cannot be {_show(key)}", source=loader.source, line=line)
        if key in seen:
            raise ScenarioError(
                f"duplicate key {_show(key)} (first given on line {seen[key]})", source=loader.source, line=line
            )
        seen[key] = line
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = key_node.start_mark.line + 1
        data.lines[key] = value_node.start_mark.line + 1


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> Iterator[LList]:
    data = LList()
    data.line = node.start_mark.line + 1
    data.lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_object(item, deep=True) for item in node.value)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def load_yaml(text: str, source: str) -> object:
    """Parse YAML ``text`` into plain values with :class:`LDict`/:class:`LList` containers; raises
    ScenarioError (``invalid YAML: ...`` with the line) for bad YAML or a duplicate key."""
    loader = _Loader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        parts = [p for p in (exc.context, exc.problem) if p]
        raise ScenarioError(
            "invalid YAML: " + ", ".join(parts), source=source, line=None if mark is None else mark.line + 1
        ) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"invalid YAML: {exc}", source=source) from None
    finally:
        loader.dispose()

# Copyright 2026 robot_memory maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Any other YAML front matter: read by libyaml once anchors, aliases and deep nesting are out."""

import re

from robot_memory.errors import MemoryFileError
from robot_memory.rcan.yaml_rules import pyyaml
from robot_memory.rcan.yaml_rules import tolerant_loader
from robot_memory.rcan.yaml_rules import yaml_classes

# Deepest nesting of collections a front matter may have (ours needs 6 plus unknown keys).
MAX_DEPTH = 64


# Cheap signs that a front matter may hold an anchor, an alias or deep nesting; only then
# is it scanned event by event before libyaml builds anything.
_MAYBE_ANCHOR = re.compile(r'[&*]')
_DEEP_INDENT = re.compile(r'^ {%d,}' % MAX_DEPTH, re.M)
_COMPACT_NESTING = re.compile(r'(?:[-?:] +){%d,}' % (MAX_DEPTH // 4))
_FLOW_BRACKET = re.compile(r'[\[\]{}]')


def _may_be_hostile(front: str) -> bool:
    if (_MAYBE_ANCHOR.search(front) or _DEEP_INDENT.search(front)
            or _COMPACT_NESTING.search(front)):
        return True
    depth = 0
    for match in _FLOW_BRACKET.finditer(front):  # quoted brackets count too: an upper bound
        if match.group() in '[{':
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif depth:
            depth -= 1
    return False


def check_structure(front: str, first_line: int = 1) -> None:
    """
    Refuse YAML anchors, aliases and nesting deeper than MAX_DEPTH before anything is built.

    An alias repeats a whole subtree: nine lines of them ("billion laughs") stand for a
    thousand million entries once written out as JSON, quarantined or validated. Deep
    nesting crashes libyaml's recursive composer. The event scan stops at the first
    offence, so a hostile file costs microseconds, not the machine.
    """
    if not _may_be_hostile(front):
        return
    depth = 0
    collection_start = (pyyaml().SequenceStartEvent, pyyaml().MappingStartEvent)
    collection_end = (pyyaml().SequenceEndEvent, pyyaml().MappingEndEvent)
    try:
        for event in pyyaml().parse(front, Loader=yaml_classes()[0]):
            anchor = getattr(event, 'anchor', None)
            if anchor is not None:
                line = first_line + event.start_mark.line
                kind, sign = (('alias', '*') if isinstance(event, pyyaml().AliasEvent)
                              else ('anchor', '&'))
                raise MemoryFileError(
                    f'front matter uses a YAML {kind} ({sign}{anchor}); anchors and aliases '
                    'are not allowed in a memory file (a few of them can stand for gigabytes '
                    'of entries): write each value out in full', line=line)
            if isinstance(event, collection_start):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(first_line + event.start_mark.line)
            elif isinstance(event, collection_end):
                depth -= 1
    except pyyaml().YAMLError as error:
        # libyaml 0.2.6 and later refuse 1,000 levels while scanning ahead, before the
        # events of the 65th level reach this loop: the same refusal, said the same way.
        mark = getattr(error, 'problem_mark', None)
        if mark is not None and 'nesting depth' in (getattr(error, 'problem', '') or ''):
            raise _too_deep(first_line + mark.line) from None
        return  # not YAML: the loader reports it, naming the line


def _too_deep(line: int) -> MemoryFileError:
    return MemoryFileError(
        f'front matter nests lists and mappings more than {MAX_DEPTH} levels deep; a memory '
        'file needs a few: this file is damaged or was not written for robot_memory', line=line)


def yaml_front_matter(front: str, first_line: int):
    """Parse any YAML front matter with libyaml; errors name the file line."""
    check_structure(front, first_line)
    try:
        mapping = pyyaml().load(front, Loader=tolerant_loader())
    except pyyaml().MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = first_line + mark.line if mark is not None else None
        problem = error.problem or error.context or 'invalid YAML'
        raise MemoryFileError(f'front matter is not valid YAML: {problem}', line=line) from None
    except pyyaml().YAMLError as error:
        raise MemoryFileError(f'front matter is not valid YAML: {error}', line=first_line) from None
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, dict):
        raise MemoryFileError(
            f'front matter must be a YAML mapping of keys, found a {type(mapping).__name__}',
            line=first_line,
        )
    return mapping


def yaml_positions(front: str, first_line: int):
    """Line numbers of top-level keys and of the items of top-level sequences."""
    key_lines: dict[str, int] = {}
    item_lines: dict[str, list[int]] = {}
    try:
        node = pyyaml().compose(front, Loader=yaml_classes()[0])
    except pyyaml().YAMLError:
        return key_lines, item_lines
    if isinstance(node, pyyaml().MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            key_lines[key] = first_line + key_node.start_mark.line
            if isinstance(value_node, pyyaml().SequenceNode):
                item_lines[key] = [first_line + item.start_mark.line for item in value_node.value]
    return key_lines, item_lines

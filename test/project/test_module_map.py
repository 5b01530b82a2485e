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

"""
The map of the package in docs/architecture.md names every module, as sqlite-utils checks its docs.

Every module under robot_memory/ has its row in "Every module, one line each", every folder
its row in the layers table of "Module map", and every module the document names exists: a
module added, moved or removed without the map fails here. The README links the map.
"""

import re

import pytest

from support.paths import REPO

PACKAGE = REPO / 'robot_memory'
DOC = REPO / 'docs' / 'architecture.md'
# A module named as it is in the document: `folder/name.py` or, at the top, `name.py`.
MAP_SECTIONS = ('Module map', 'Concepts and where they live', 'Undo: how it hangs together',
                'Size limits')
NAMED = re.compile(r'`((?:[a-z_]+/)?[a-z_0-9]+\.py)(?:::[\w.]+)?`')


def _section(title: str) -> str:
    text = DOC.read_text(encoding='utf-8')
    assert f'\n## {title}\n' in text, f'docs/architecture.md has no "## {title}" section'
    return text.split(f'\n## {title}\n', 1)[1].split('\n## ', 1)[0]


def _modules() -> set:
    """Every module of the package as the map names it, package __init__ files left out."""
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob('*.py')
            if path.name != '__init__.py'}


@pytest.mark.linter
def test_every_module_has_its_line_in_the_map():
    """A row ``| `folder/module.py` | what it owns |`` for each module, and no other."""
    rows = re.findall(r'^\| `([^`]+\.py)` \| (.+) \|$', _section('Every module, one line each'),
                      re.MULTILINE)
    listed = [name for name, _ in rows]
    missing = sorted(_modules() - set(listed))
    assert not missing, ('add a row saying what it owns to "Every module, one line each" in '
                         'docs/architecture.md: ' + ', '.join(missing))
    gone = sorted(set(listed) - _modules())
    assert not gone, 'no such module; remove or rename its row: ' + ', '.join(gone)
    assert len(listed) == len(set(listed)), 'a module has two rows'
    assert all(len(what.strip()) > 10 for _, what in rows), 'say what each module owns'


@pytest.mark.linter
def test_every_folder_has_its_row_in_the_layers_table():
    """The "Module map" table names each package folder with its layer and job."""
    table = _section('Module map')
    folders = sorted(path.parent.name for path in PACKAGE.glob('*/__init__.py'))
    missing = [folder for folder in folders if f'| `{folder}/` |' not in table]
    assert not missing, 'no row in the "Module map" table of docs/architecture.md: ' + \
        ', '.join(missing)


@pytest.mark.linter
def test_every_module_the_document_names_exists():
    """The layers, the concepts, undo and the size limits name only modules that exist."""
    text = ''.join(_section(title) for title in MAP_SECTIONS)
    named = {match.removeprefix('robot_memory/') for match in NAMED.findall(text)}
    gone = sorted(name for name in named
                  if name not in _modules() | {'__init__.py'} and not (REPO / name).exists())
    assert not gone, 'docs/architecture.md names modules that do not exist: ' + ', '.join(gone)


@pytest.mark.linter
def test_the_concepts_table_names_undo_proposals_runs_and_conditions():
    """The concept → modules table holds the concepts a newcomer looks for first."""
    table = _section('Concepts and where they live')
    concepts = re.findall(r'^\| ([^|`]+?) \| ', table, re.MULTILINE)
    for concept in ('undo', 'proposals', 'runs', 'conditions', 'black box', 'fleet'):
        assert any(name.startswith(concept) for name in concepts), concept


@pytest.mark.linter
def test_the_readme_links_the_map():
    """A newcomer finds the map from the README."""
    readme = (REPO / 'README.md').read_text(encoding='utf-8')
    assert '(docs/architecture.md)' in readme

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

"""The licence: LICENSE holds the Apache-2.0 text the package declares, every file a header."""

import configparser
import re
import xml.etree.ElementTree as ElementTree

import pytest

from support.paths import python_files
from support.paths import REPO

HEADER = (REPO / 'test' / 'project' / 'test_copyright.py').read_text(
    encoding='utf-8').split('\n\n')[0]


@pytest.mark.linter
def test_license_file_is_the_apache_2_licence_the_package_declares():
    """Check LICENSE against package.xml and setup.cfg."""
    text = (REPO / 'LICENSE').read_text(encoding='utf-8')
    assert 'Apache License' in text and 'Version 2.0, January 2004' in text
    assert 'END OF TERMS AND CONDITIONS' in text
    assert ElementTree.parse(REPO / 'package.xml').find('license').text == 'Apache-2.0'
    setup = configparser.ConfigParser()
    setup.read(REPO / 'setup.cfg')
    assert setup['metadata']['license'] == 'Apache-2.0'


# A package's __init__.py opens with one line saying what its folder owns, then the licence.
SUMMARY_LINE = re.compile(r'"""[^"\n]+"""\n')


@pytest.mark.linter
def test_every_python_file_starts_with_the_licence_header():
    """Check the header of every Python file (after the #! line, or one summary line)."""
    assert HEADER.startswith('# Copyright ') and 'Apache License, Version 2.0' in HEADER
    missing = []
    for path in python_files():
        text = path.read_text(encoding='utf-8')
        if text.startswith('#!'):
            text = text.split('\n', 1)[1].lstrip('\n')
        summary = SUMMARY_LINE.match(text)
        if summary is not None:
            text = text[summary.end():]
        if not text.startswith(HEADER):
            missing.append(str(path.relative_to(REPO)))
    assert not missing, 'no licence header (copy the one of test/project/test_copyright.py): ' + \
        ', '.join(missing)


@pytest.mark.linter
def test_every_package_opens_with_a_line_saying_what_its_folder_owns():
    """Each ``__init__.py`` of robot_memory: a one-line docstring first, then the licence."""
    missing = []
    for path in sorted((REPO / 'robot_memory').rglob('__init__.py')):
        text = path.read_text(encoding='utf-8')
        summary = SUMMARY_LINE.match(text)
        if summary is None or not text[summary.end():].startswith(HEADER):
            missing.append(str(path.relative_to(REPO)))
    assert not missing, ('open with one line \'"""What this folder owns."""\', then the licence '
                         'header: ' + ', '.join(missing))

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

"""The Substrate facade says what it takes: named, typed keywords, each with its docstring line."""

import datetime as dt
import inspect

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.learning import LearnRequest
from robot_memory.substrate.records import NewRecord
from robot_memory.substrate.records import RecordTable
from robot_memory.substrate.substrate_store import Substrate

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
ANY = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def public_methods(cls) -> list:
    """Return (name, function) of the public methods ``cls`` defines or inherits."""
    return [(name, value) for name, value in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith('_')]


@pytest.mark.parametrize('name, method', public_methods(Substrate))
def test_no_method_forwards_args_or_kwargs(name, method):
    """A reader, and mypy, see every keyword a method takes: no *args or **kwargs."""
    forwarded = [str(parameter) for parameter in inspect.signature(method).parameters.values()
                 if parameter.kind in ANY]
    assert not forwarded, f'Substrate.{name} takes {forwarded}'


@pytest.mark.parametrize('name, method', [(name, method) for name, method in
                                          public_methods(Substrate)
                                          if name in vars(Substrate)])
def test_each_operation_types_and_documents_every_parameter(name, method):
    """Each parameter is annotated and has its ``:param name:`` line, as sqlite-utils does."""
    parameters = list(inspect.signature(method).parameters.values())[1:]  # after self
    doc = inspect.getdoc(method) or ''
    for parameter in parameters:
        assert parameter.annotation is not inspect.Parameter.empty, \
            f'Substrate.{name}({parameter.name}) has no type'
        if len(parameters) > 1 or name in ('recall', 'learn'):
            assert f':param {parameter.name}:' in doc, \
                f'Substrate.{name} does not say what {parameter.name} is'


def test_insert_takes_a_record_not_twenty_positions():
    """RecordTable.insert(conn, now_s, record): the fields are named on a NewRecord."""
    assert list(inspect.signature(RecordTable.insert).parameters) == ['self', 'conn', 'now_s',
                                                                      'record']
    assert len(NewRecord.__dataclass_fields__) == 17


def test_the_optional_arguments_are_keywords(tmp_path):
    """An optional argument passed by position is refused by Python, not taken for another."""
    with Substrate(tmp_path / 'records.db') as substrate:
        learned = substrate.learn('The charging dock is in the hallway', now=NOW)
        with pytest.raises(TypeError):
            substrate.recall('charging dock', 3)  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            substrate.forget(learned.record_id, 'test', NOW, True)  # type: ignore[call-arg]
        assert substrate.recall('charging dock', k=3, now=NOW).hits[0].id == learned.record_id


def test_learn_takes_a_request_or_keywords_but_not_both(tmp_path):
    """A LearnRequest stays an object; with keywords beside it the learn is refused."""
    request = LearnRequest('The fire exit is behind the canteen', now=NOW, tags=['safety'])
    with Substrate(tmp_path / 'records.db') as substrate:
        with pytest.raises(SubstrateError, match='not both'):
            substrate.learn(request, tags=['other'])
        assert substrate.count() == 0
        preview = substrate.preview_learn(request)
        assert preview.action == 'created' and substrate.count() == 0
        assert substrate.learn(request).action == 'created' and substrate.count() == 1

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

"""JSON from outside: text nested too deeply is malformed JSON, never a RecursionError."""

import json

import pytest

from robot_memory.common import jsontext


@pytest.mark.parametrize('text', ['[' * 100_000, '{"a": ' * 50_000, '[' * 100_000 + ']' * 100_000])
def test_text_nested_past_the_recursion_limit_is_a_json_decode_error(text):
    with pytest.raises(json.JSONDecodeError) as raised:
        jsontext.loads(text)
    assert raised.value.msg == jsontext.NESTED_TOO_DEEPLY
    assert isinstance(raised.value, ValueError)  # what callers refusing bad JSON catch


def test_bytes_and_options_pass_through_as_json_loads_takes_them():
    assert jsontext.loads(b'{"a": [1, 2.5]}') == {'a': [1, 2.5]}
    assert jsontext.loads('[NaN]', parse_constant=str) == ['NaN']
    assert jsontext.loads('[' * 50 + ']' * 50) == json.loads('[' * 50 + ']' * 50)
    with pytest.raises(json.JSONDecodeError):
        jsontext.loads(b'[' * 100_000)
    with pytest.raises(json.JSONDecodeError):
        jsontext.loads('{"a": ')

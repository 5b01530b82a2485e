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
JSON from outside (a file, a topic, the network, a model's reply): malformed, never a crash.

``json.loads`` raises RecursionError, not ValueError, on text nested deeper than Python's
recursion limit: a few kilobytes of ``[`` from anyone. Callers that refuse malformed JSON with
``except ValueError`` then let it escape: a command died with a traceback, a queue stopped.
:func:`loads` makes it one more :class:`json.JSONDecodeError`, so every caller refuses it the
way it refuses any other malformed JSON.
"""

import json
from typing import Any

NESTED_TOO_DEEPLY = 'JSON nested too deeply'


def loads(text, **options) -> Any:
    """Return the JSON value of ``text`` as json.loads does; nested too deeply: JSONDecodeError."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise json.JSONDecodeError(NESTED_TOO_DEEPLY, text if isinstance(text, str) else '',
                                   0) from None

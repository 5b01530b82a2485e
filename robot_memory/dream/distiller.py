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
Distillers: who words a new memory entry.

A distiller only *proposes texts*: ``rewrite(candidates)`` returns a dict from signature
to text, and the dream keeps a proposal only if it is 1 to 500 printable characters on
one line; anything else (a missing key, an unknown signature, garbage) falls back to the
rule template's text. A distiller never sees the memory file and cannot delete, re-type
or re-score anything.

A candidate whose rule text quotes instruction-like text (``rcan.untrusted``) is never sent
to a model and always keeps its rule text.

``RuleDistiller`` (the default) returns the rule texts. ``OpenAICompatibleDistiller``
asks an OpenAI-compatible server (``POST {base_url}/v1/chat/completions``, standard
library ``urllib`` only) for a short operational sentence per candidate, in batches; on
any failure or timeout the rule texts are used and the remaining batches are skipped, so
a dead server costs at most one timeout per dream.
"""

import dataclasses
import json
import os
import time
from typing import Optional
from typing import Protocol

from robot_memory.common import jsontext
from robot_memory.rcan import untrusted
from robot_memory.rcan.schema import check_printable
from robot_memory.rcan.schema import MAX_TEXT_CHARS


@dataclasses.dataclass(frozen=True)
class Candidate:
    """Evidence about to become a new entry, with the rule template's text."""

    signature: str
    source: str
    entry_type: str
    text: str
    tags: tuple
    count: int
    severity: int
    payload: dict


class Distiller(Protocol):
    """Anything with ``rewrite(candidates) -> {signature: text}``."""

    def rewrite(self, candidates: list) -> dict:
        """Propose a text for each candidate, keyed by signature."""


def valid_text(text) -> Optional[str]:
    """``text`` stripped if it is 1..500 printable characters on one line, else None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text or len(text) > MAX_TEXT_CHARS:
        return None
    try:
        check_printable(text, 'text')
    except ValueError:
        return None
    return text


def proposals(candidates: list, proposed) -> tuple:
    """
    Merge a distiller's proposals with the rule texts: (texts, signatures that fell back).

    A candidate quoting instruction-like text (``rcan.untrusted``) keeps its rule text: a
    rewording could launder the instruction out of its quotation.
    """
    proposed = proposed if isinstance(proposed, dict) else {}
    texts, fell_back = {}, []
    for candidate in candidates:
        text = None if untrusted.is_instruction_like(candidate.text) else \
            valid_text(proposed.get(candidate.signature))
        if text is None:
            fell_back.append(candidate.signature)
            text = candidate.text
        texts[candidate.signature] = text
    return texts, fell_back


class RuleDistiller:
    """The default: every candidate keeps its rule template's text."""

    def rewrite(self, candidates: list) -> dict:
        """Return the rule texts, unchanged."""
        return {candidate.signature: candidate.text for candidate in candidates}


_SYSTEM_PROMPT = (
    'You maintain the operational memory of a robot. For each numbered observation, write '
    'one short sentence (at most 200 characters, plain text, one line) that an on-board '
    'assistant can act on: what is wrong, where, and how to behave. Do not invent facts. '
    'Reply with only a JSON object mapping each number to its sentence.'
)


class OpenAICompatibleDistiller:
    """Rewrites candidate texts with an OpenAI-compatible chat completions server."""

    def __init__(self, base_url: str, model: str, api_key_env: Optional[str] = None,
                 timeout_s: float = 10.0, batch_size: int = 20, budget_s: float = 60.0):
        if not base_url.startswith(('http://', 'https://')):
            raise ValueError(f'base_url {base_url!r} must start with http:// or https://')
        if timeout_s <= 0 or budget_s <= 0 or batch_size < 1:
            raise ValueError('timeout_s and budget_s must be positive and batch_size at least 1')
        base = base_url.rstrip('/')
        self.url = base + ('/chat/completions' if base.endswith('/v1') else
                           '/v1/chat/completions')
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self.budget_s = budget_s
        self.errors: list[str] = []

    def rewrite(self, candidates: list) -> dict:
        """Texts from the server where it answered well; rule texts everywhere else."""
        import http.client  # lazy: 6 ms and 1.1 MB of a dream without an LLM distiller
        self.errors = []
        texts = {candidate.signature: candidate.text for candidate in candidates}
        # Instruction-like text never reaches the model: it could steer the whole batch.
        candidates = [candidate for candidate in candidates
                      if not untrusted.is_instruction_like(candidate.text)]
        deadline = time.monotonic() + self.budget_s
        for start in range(0, len(candidates), self.batch_size):
            batch = candidates[start:start + self.batch_size]
            if time.monotonic() > deadline:
                self.errors.append(f'time budget of {self.budget_s:.0f} s spent; '
                                   f'{len(candidates) - start} candidates keep rule texts')
                break
            try:
                answer = self._ask(batch)
            except (AttributeError, http.client.HTTPException, IndexError, KeyError, OSError,
                    TypeError, ValueError) as error:
                self.errors.append(f'{self.url}: {type(error).__name__}: {error}; rule texts '
                                   'are used for this dream')
                break
            for index, candidate in enumerate(batch, start=1):
                text = valid_text(answer.get(str(index)))
                if text is not None:
                    texts[candidate.signature] = text
        return texts

    def _ask(self, batch: list) -> dict:
        items = {str(index): {'observation': candidate.text, 'source': candidate.source,
                              'type': candidate.entry_type, 'count': candidate.count}
                 for index, candidate in enumerate(batch, start=1)}
        body = json.dumps({
            'model': self.model,
            'temperature': 0,
            'messages': [{'role': 'system', 'content': _SYSTEM_PROMPT},
                         {'role': 'user', 'content': json.dumps(items, ensure_ascii=False)}],
        }).encode('utf-8')
        headers = {'Content-Type': 'application/json'}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers['Authorization'] = f'Bearer {key}'
        import urllib.request  # lazy: 8 ms and 1.3 MB of a dream without an LLM distiller
        request = urllib.request.Request(self.url, data=body, headers=headers, method='POST')
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            reply = jsontext.loads(response.read(1 << 20).decode('utf-8'))
        content = reply['choices'][0]['message']['content']
        content = content.strip()
        if content.startswith('```'):
            content = content.strip('`').removeprefix('json').strip()
        answer = jsontext.loads(content)
        if not isinstance(answer, dict):
            raise ValueError('the reply is not a JSON object of numbered texts')
        return answer

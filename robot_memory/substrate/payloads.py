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
The payload of a record: built from its text by rules, or checked when the caller gives one.

Each memory type has its payload model (:data:`~robot_memory.substrate.models.PAYLOAD_MODELS`);
a payload is always returned validated by it, as the dict stored in the record.
"""

import datetime as dt
import json

from robot_memory.common.timeutil import format_iso
from robot_memory.substrate import textrules
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.filters import check_json
from robot_memory.substrate.record_tables import when
from robot_memory.substrate.validation import check_text
from robot_memory.substrate.validation import first_error


def build(kind: str, text: str, payload, context: dict, conditions, now: dt.datetime,
          record_id: str) -> dict:
    """Return the checked payload of a new record: as given, else derived from its text."""
    if payload is not None:
        if not isinstance(payload, dict):
            raise SubstrateError('payload must be an object matching the schema of its type')
        data = dict(payload)
        data.setdefault('kind', kind)
        if data['kind'] != kind:
            raise SubstrateError(f'payload kind {data["kind"]!r} does not match type {kind!r}')
    elif kind == 'semantic':
        fact = textrules.parse_fact(text)
        subject, predicate, value = fact or (textrules.normalise(text), 'holds', True)
        data = {'kind': 'semantic', 'subject': subject, 'predicate': predicate,
                'object': value}
    elif kind == 'competence':
        procedure = textrules.parse_procedure(text)
        skill, steps = procedure or (' '.join(textrules.tokens(text)[:6]) or 'skill', [text])
        data = {'kind': 'competence', 'skill_name': skill, 'triggers': [{'signal': skill}],
                'recipe': [{'step': step} for step in steps]}
    elif kind == 'plan_graph':
        procedure = textrules.parse_procedure(text)
        intent, steps = procedure or (' '.join(textrules.tokens(text)[:6]) or 'plan', [text])
        nodes = [{'id': f'n{index + 1}', 'op': step} for index, step in enumerate(steps)]
        edges = [{'from': f'n{index}', 'to': f'n{index + 1}', 'kind': 'control'}
                 for index in range(1, len(steps))]
        data = {'kind': 'plan_graph', 'plan_id': record_id, 'version': '1', 'intent': intent,
                'nodes': nodes, 'edges': edges}
    elif kind == 'working':
        data = {'kind': 'working', 'thread_id': str(context.get('task') or 'default'),
                'state': 'executing', 'context_summary': text}
    else:
        data = {'kind': 'episodic', 'timeline': [
            {'t': format_iso(now), 'event_kind': str(context.get('event') or 'note'),
             'ref': f'record:{record_id}', 'summary': text}]}
    if kind == 'semantic' and conditions is not None:
        if not isinstance(conditions, dict):
            raise SubstrateError('conditions must be an object, e.g. {"floor": 2}')
        check_json(conditions, 'conditions', max_bytes=2048)
        data['validity'] = {'mode': 'conditional' if conditions else 'global',
                            'conditions': conditions or None}
    check_json(data, 'payload', max_bytes=65536, max_depth=12)
    # lazy: the record models and pydantic, 250 ms and 10 MB of robot-memory recall
    import pydantic
    from robot_memory.substrate import models
    try:
        model = models.PAYLOAD_MODELS[kind].model_validate(data)
    except pydantic.ValidationError as error:
        detail = first_error(error)
        if payload is None and not detail.startswith('validity'):
            # The payload was derived from the text: the text is what the caller must fix.
            raise SubstrateError(f'text does not make a valid {kind} record ({detail}); '
                                 'shorten it or choose another type') from None
        raise SubstrateError(f'{kind} payload is invalid: {detail}; see '
                             f'json_schema({models.PAYLOAD_MODELS[kind].__name__!r})') from None
    return model.to_dict()


def revised(old: dict, text, payload, value, new_id: str) -> dict:
    """Return the checked payload of a new version of row ``old`` (text, object or payload)."""
    if payload is not None:
        data = dict(payload)
        data.setdefault('kind', old['type'])
    else:
        data = json.loads(old['payload'])
        if value is not None:
            if old['type'] != 'semantic':
                raise SubstrateError('object= applies to semantic records; pass payload= '
                                     'for other types')
            data['object'] = value
        elif text is not None and old['type'] != 'semantic':
            data = build(old['type'], check_text(text), None, json.loads(old['context']),
                         None, when(old['created_at']), new_id)
        data.pop('revision', None)
    # lazy: the record models and pydantic, 250 ms and 10 MB of robot-memory recall
    import pydantic
    from robot_memory.substrate import models
    try:
        return models.PAYLOAD_MODELS[old['type']].model_validate(data).to_dict()
    except pydantic.ValidationError as error:
        raise SubstrateError(f'{old["type"]} payload is invalid: {first_error(error)}') \
            from None


def apply_conditions(kind: str, data: dict, conditions: dict) -> None:
    """Make payload ``data`` of type ``kind`` hold under ``conditions`` (in place)."""
    if kind == 'semantic':
        data['validity'] = {'mode': 'conditional' if conditions else 'global',
                            **({'conditions': conditions} if conditions else {})}
    elif kind == 'competence':
        for trigger in data['triggers']:
            trigger['conditions'] = conditions
    elif kind == 'plan_graph':
        data['constraints'] = conditions
    else:
        data.setdefault('next_actions', [])

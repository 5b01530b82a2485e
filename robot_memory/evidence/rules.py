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
Observation rules: which observations are evidence, for what, and how an entry reads.

A rules file (``config/observation_rules.yaml`` documents every key) lists rules tried in
file order; the first rule matching a diagnostic or a log record decides it, while every
telemetry rule matching a message's type and topic is evaluated. A rule gives:

* ``entry_type`` and ``tags`` of the entry the evidence builds;
* a ``signature`` template: what makes two observations the same thing. Evidence is
  matched to entries by signature, never by text;
* a ``text`` template for the entry (a distiller may propose better wording);
* ``min_count``: observations needed (over all time) before an entry is created;
* ``ignore: true`` to drop matching observations altogether.

Without a rules file the defaults apply: a WARN or ERROR diagnostic is a
``hardware_observation`` signed by hardware_id + name + the message with its ids and
numbers masked (``message_pattern``); an ERROR/FATAL log record is evidence signed by node
name + masked message
and becomes an entry once repeated (``log_min_count``, default 2). Telemetry has no
defaults: threshold rules such as ``when: percentage < 0.2`` on
``sensor_msgs/msg/BatteryState`` name a field path, an operator and a value.

Each classified observation yields a ``Classification``: the signature (None for an
OK report), the *source key* (who reported: hardware_id + name of a diagnostic, node of
a log, rule + topic of telemetry; OK reports of the same source key resolve entries),
a severity (0 OK, 1 WARN, 2 ERROR) and a compact JSON payload for the text templates.
"""

import dataclasses
import fnmatch
import hashlib
import json
from json.encoder import encode_basestring as _quote
import pathlib
import re
import string
from typing import Any
from typing import NamedTuple
from typing import Optional

from pydantic import ValidationError
import yaml

from robot_memory.common import validation_text
from robot_memory.common.fileio import read_settings_text
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence.observations import DIAGNOSTIC_LEVELS
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import identifiers_masked_in
from robot_memory.evidence.observations import LOG_LEVELS
from robot_memory.evidence.observations import LogObservation
from robot_memory.evidence.observations import message_pattern
from robot_memory.evidence.observations import TelemetryObservation
from robot_memory.evidence.rules_file import DEFAULT_SIGNATURES
from robot_memory.evidence.rules_file import DEFAULT_TEXTS
from robot_memory.evidence.rules_file import DiagnosticRule
from robot_memory.evidence.rules_file import LogRule
from robot_memory.evidence.rules_file import parse_when
from robot_memory.evidence.rules_file import RulesFile
from robot_memory.rcan import untrusted
from robot_memory.rcan.schema import MAX_TAG_CHARS
from robot_memory.rcan.schema import MAX_TEXT_CHARS

MAX_SIGNATURE_CHARS = 512
_OPS = {
    '<': lambda a, b: a < b, '<=': lambda a, b: a <= b, '>': lambda a, b: a > b,
    '>=': lambda a, b: a >= b, '==': lambda a, b: a == b, '!=': lambda a, b: a != b,
}
_UNSAFE_TEXT = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]+')


class RulesError(RobotMemoryError, ValueError):
    """A rules file that cannot be used; the message names the rule and the field."""


class Classification(NamedTuple):
    """What one observation is evidence of (severity 0 is an OK report, signature None)."""

    signature: Optional[str]
    source_key: str
    severity: int
    payload: str
    rule: str


@dataclasses.dataclass(frozen=True)
class RuleView:
    """How entries of one rule (or a source's default) are typed, tagged and worded."""

    name: str
    source: str
    entry_type: str
    tags: tuple
    text: str
    min_count: int
    normal: bool = False  # the rule declares its condition normal (rules_file._RuleBase)


def normal_type(type_name: str) -> str:
    """``pkg/Type`` and ``pkg/msg/Type`` name the same message type; use the long form."""
    parts = type_name.split('/')
    return f'{parts[0]}/msg/{parts[1]}' if len(parts) == 2 else type_name


def _glob(pattern: str):
    if pattern == '*':
        return None
    return re.compile(fnmatch.translate(pattern)).match


def _matches(matcher, value: str) -> bool:
    return matcher is None or matcher(value) is not None


class _SafeFormatter(string.Formatter):
    """Render a template; a field missing from the payload becomes ``?``."""

    def get_field(self, field_name, args, kwargs):
        try:
            return super().get_field(field_name, args, kwargs)
        except (KeyError, IndexError, AttributeError, TypeError):
            return '?', field_name

    def format_field(self, value, format_spec):
        try:
            return super().format_field(value, format_spec)
        except (ValueError, TypeError):
            return str(value)


_FORMATTER = _SafeFormatter()


def clean_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """One printable line: unsafe characters become spaces, whitespace squeezed, cut to limit."""
    text = ' '.join(_UNSAFE_TEXT.sub(' ', text).split())
    if len(text) > limit:
        text = text[:limit - 1].rstrip() + '…'
    return text


def _clean_tag(tag: str) -> Optional[str]:
    tag = clean_text(tag, MAX_TAG_CHARS)
    return tag or None


def _compact_signature(text: str) -> str:
    if len(text) <= MAX_SIGNATURE_CHARS:
        return text
    digest = hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]
    return text[:MAX_SIGNATURE_CHARS - 17] + '#' + digest


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(',', ':'), allow_nan=False).encode


def _utf8(text: str) -> str:
    """``text`` if it encodes as UTF-8; lone surrogates (SQLite refuses them) become ``?``."""
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        return text.encode('utf-8', 'replace').decode('utf-8')
    return text


class _Values(dict):
    """Template values; a placeholder missing from the payload renders as ``?``."""

    def __missing__(self, key):
        return '?'


def render_template(template: str, values: dict) -> str:
    """``template`` filled from ``values``; anything missing or unformattable becomes ``?``."""
    try:
        return template.format_map(_Values(values))
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return _FORMATTER.vformat(template, (), values)


def _field_value(fields: Any, path: tuple) -> Any:
    value = fields
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return None
        elif not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


class Rules:
    """A validated rules file compiled for fast classification."""

    _CACHE_LIMIT = 50_000

    def __init__(self, spec: Optional[RulesFile] = None, origin: str = '<defaults>'):
        self.spec = spec or RulesFile()
        self.origin = origin
        self._diagnostic = []
        self._log = []
        self._telemetry = []
        for rule in self.spec.rules:
            if isinstance(rule, DiagnosticRule):
                self._diagnostic.append((rule, _glob(rule.match.name),
                                         _glob(rule.match.hardware_id),
                                         _glob(rule.match.message), frozenset(rule.match.levels)))
            elif isinstance(rule, LogRule):
                self._log.append((rule, _glob(rule.match.node), _glob(rule.match.message),
                                  frozenset(rule.match.levels)))
            else:
                self._telemetry.append((rule, normal_type(rule.type), _glob(rule.topic),
                                        parse_when(rule.when)))
        self._by_name = {rule.name: rule for rule in self.spec.rules}
        self._signature_templates = {rule.name: rule.signature for rule in self.spec.rules
                                     if rule.signature}
        # Rules whose text or signature template reads a diagnostic's key/values: their
        # evidence depends on the values, so the values are part of the payload and of
        # the classification cache key (otherwise the first values seen would be reused).
        self._values_rules = {rule.name for rule, *_ in self._diagnostic
                              if 'values' in (rule.text or '') + (rule.signature or '')}
        self._cache: dict[tuple, list] = {}

    @classmethod
    def default(cls) -> 'Rules':
        """Return the built-in defaults, used when there is no rules file."""
        return cls()

    @classmethod
    def from_data(cls, data: Any, origin: str = '<rules>') -> 'Rules':
        """Validate a decoded rules document; errors name the rule and the field."""
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise RulesError(f'{origin}: a rules file is a mapping with version, defaults and '
                             f'rules; found a {type(data).__name__}')
        try:
            spec = RulesFile.model_validate(data)
        except ValidationError as error:
            raise RulesError(f'{origin}: {_describe(error, data)}') from None
        return cls(spec, origin)

    @classmethod
    def load(cls, path) -> 'Rules':
        """Read and validate a YAML rules file."""
        path = pathlib.Path(path).expanduser()
        try:
            data = yaml.load(read_settings_text(path), Loader=yaml.CSafeLoader)
        except OSError as error:
            raise RulesError(f'{path}: cannot read the rules file: {error.strerror}') from None
        except yaml.YAMLError as error:
            raise RulesError(f'{path}: not valid YAML: {error}') from None
        return cls.from_data(data, str(path))

    # ------------------------------------------------------------------ classification

    def classify(self, observation) -> list:
        """Return the evidence ``observation`` gives: zero, one or (telemetry) several items."""
        key: tuple
        if isinstance(observation, DiagnosticObservation):
            key = ('d', observation.name, observation.hardware_id, observation.level,
                   observation.message, observation.values if self._values_rules else None)
            found = self._cache.get(key)
            if found is None:
                found = self._classify_diagnostic(observation)
                self._remember(key, found)
            return found
        if isinstance(observation, LogObservation):
            key = ('l', observation.name, observation.level, observation.msg, observation.file,
                   observation.function, observation.line)
            found = self._cache.get(key)
            if found is None:
                found = self._classify_log(observation)
                self._remember(key, found)
            return found
        if isinstance(observation, TelemetryObservation):
            return self._classify_telemetry(observation)
        raise TypeError(f'not an observation: {type(observation).__name__}')

    @property
    def reads_values(self) -> bool:
        """Whether a diagnostic's evidence depends on its key/values (some rule reads them)."""
        return bool(self._values_rules)

    def telemetry_rules_for(self, topic: str, type_name: str) -> list:
        """Names of the telemetry rules that read ``topic`` of ``type_name`` (not ignoring)."""
        type_name = normal_type(type_name)
        return [rule.name for rule, rule_type, pattern, _ in self._telemetry
                if rule_type == type_name and _matches(pattern, topic) and not rule.ignore]

    def _remember(self, key, found) -> None:
        if len(self._cache) >= self._CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = found

    def _classify_diagnostic(self, obs: DiagnosticObservation) -> list:
        source_key = f'diagnostic|{obs.hardware_id}|{obs.name}'
        chosen = None
        for rule, name, hardware_id, message, levels in self._diagnostic:
            if not (_matches(name, obs.name) and _matches(hardware_id, obs.hardware_id)
                    and _matches(message, obs.message)):
                continue
            if rule.ignore:
                return []
            if obs.level in levels:
                chosen = rule
                break
        if obs.level == 0:
            return [Classification(None, source_key, 0, '', '')]
        if chosen is None:
            defaults = self.spec.defaults
            if not defaults.diagnostics or obs.level not in defaults.diagnostic_levels:
                return []
        rule_name = chosen.name if chosen is not None else ''
        payload = {'rule': rule_name, 'name': obs.name, 'hardware_id': obs.hardware_id,
                   'message': obs.message, 'level': obs.level}
        if rule_name in self._values_rules:
            payload['values'] = dict(obs.values)
            text = _dumps(payload)
        else:
            text = (f'{{"rule":{_quote(rule_name)},"name":{_quote(obs.name)},"hardware_id":'
                    f'{_quote(obs.hardware_id)},"message":{_quote(obs.message)},'
                    f'"level":{obs.level}}}')
        signature = self._signature('diagnostic', rule_name, payload)
        severity = 2 if obs.level == 2 else 1
        return [Classification(_utf8(signature), _utf8(source_key), severity, _utf8(text),
                               rule_name)]

    def _classify_log(self, obs: LogObservation) -> list:
        chosen = None
        for rule, node, message, levels in self._log:
            if _matches(node, obs.name) and _matches(message, obs.msg) and obs.level in levels:
                if rule.ignore:
                    return []
                chosen = rule
                break
        if chosen is None and not self.spec.defaults.logs:
            return []
        rule_name = chosen.name if chosen is not None else ''
        payload = {'rule': rule_name, 'node': obs.name, 'message': obs.msg, 'level': obs.level,
                   'file': obs.file, 'function': obs.function, 'line': obs.line}
        signature = self._signature('log', rule_name, payload)
        return [Classification(_utf8(signature), _utf8(f'log|{obs.name}'), 2,
                               _utf8(_dumps(payload)), rule_name)]

    def _classify_telemetry(self, obs: TelemetryObservation) -> list:
        found = []
        type_name = normal_type(obs.type)
        for rule, rule_type, topic, threshold in self._telemetry:
            if rule_type != type_name or not _matches(topic, obs.topic):
                continue
            if rule.ignore:
                return []
            value = _field_value(obs.fields, threshold.path)
            if value is None or isinstance(value, (dict, list)):
                continue
            if isinstance(value, bool) != isinstance(threshold.value, bool):
                continue
            try:
                hit = _OPS[threshold.op](value, threshold.value)
            except TypeError:
                continue
            source_key = _utf8(f'telemetry|{rule.name}|{obs.topic}')
            if not hit:
                found.append(Classification(None, source_key, 0, '', rule.name))
                continue
            payload = {'rule': rule.name, 'topic': obs.topic, 'type': obs.type,
                       'field': threshold.field, 'op': threshold.op,
                       'threshold': threshold.value, 'value': value}
            signature = self._signature('telemetry', rule.name, payload)
            severity = 2 if rule.severity == 'error' else 1
            found.append(Classification(_utf8(signature), source_key, severity,
                                        _utf8(_dumps(payload)), rule.name))
        return found

    def signature_of(self, source: str, payload: Any) -> Optional[str]:
        """
        Return the signature evidence with this stored ``payload`` gets now, or None.

        None when these rules cannot tell: the payload is not one, or names a rule this
        file does not have, or the rule reads key/values the payload did not keep.
        """
        if source not in DEFAULT_SIGNATURES or not isinstance(payload, dict):
            return None
        rule_name = payload.get('rule', '')
        if rule_name and self._by_name.get(rule_name) is None:
            return None
        if rule_name in self._values_rules and 'values' not in payload:
            return None
        try:
            return _utf8(self._signature(source, rule_name, payload))
        except (KeyError, TypeError):
            return None

    def _signature(self, source: str, rule_name: str, payload: dict) -> str:
        template = self._signature_templates.get(rule_name)
        if template is None:
            if source == 'diagnostic':
                text = (f'{payload["hardware_id"]}|{payload["name"]}|'
                        f'{message_pattern(payload["message"])}')
            elif source == 'log':
                text = f'{payload["node"]}|{message_pattern(payload["message"])}'
            else:
                text = f'{payload["rule"]}|{payload["topic"]}'
        else:
            text = render_template(template, _template_values(source, payload))
        return _compact_signature(f'{source}|{text}')

    # ------------------------------------------------------------------ entries

    def view(self, source: str, rule_name: str) -> RuleView:
        """Type, tags, text template and min_count for evidence of ``rule_name``."""
        rule = self._by_name.get(rule_name)
        if rule is not None and rule.source == source:
            return RuleView(rule.name, source, rule.entry_type, tuple(rule.tags),
                            rule.text or DEFAULT_TEXTS[source], rule.min_count, rule.normal)
        defaults = self.spec.defaults
        if source == 'diagnostic':
            return RuleView('', source, defaults.diagnostic_entry_type, ('diagnostics',),
                            DEFAULT_TEXTS[source], 1)
        if source == 'log':
            return RuleView('', source, defaults.log_entry_type, ('log',),
                            DEFAULT_TEXTS[source], defaults.log_min_count)
        return RuleView(rule_name, source, 'hardware_observation', ('telemetry',),
                        DEFAULT_TEXTS[source], 1)

    def candidate_text(self, source: str, payload: dict) -> str:
        """Return the entry text the rule template gives for one observation's payload."""
        view = self.view(source, payload.get('rule', ''))
        text = clean_text(render_template(view.text, _template_values(source, payload)))
        message = reported({'message': payload.get('message', '')})['message']
        return text or clean_text(f'{source} evidence: {message}') or source

    def candidate_tags(self, source: str, payload: dict) -> list:
        """Tags for an entry: the rule's tags, plus the hardware id / node by default."""
        view = self.view(source, payload.get('rule', ''))
        tags = list(view.tags)
        if not view.name:
            extra = payload.get('hardware_id') if source == 'diagnostic' else payload.get('node')
            if extra:
                tags.append(extra)
        cleaned = []
        for tag in tags:
            tag = _clean_tag(tag)
            if tag and tag not in cleaned:
                cleaned.append(tag)
        return cleaned[:32]


def _template_values(source: str, payload: dict) -> dict:
    values = identifiers_masked_in(payload)
    if source in ('diagnostic', 'log'):
        values['message_pattern'] = message_pattern(payload.get('message', ''))
        level = payload.get('level')
        names: dict = DIAGNOSTIC_LEVELS if source == 'diagnostic' else LOG_LEVELS
        values['level_name'] = names.get(level, str(level))
    return reported(values)


def reported(values: dict) -> dict:
    """
    Return ``values`` with each text that reads like an instruction to a model quoted.

    What a node reported is data: such a text goes into an entry as a quotation, one line
    capped at ``untrusted.QUOTE_CHARS`` (``untrusted.quote``), and the entry is held from
    the brain until a person releases it. Other texts are kept as they are (existing
    entries keep their texts, their ids and their link to the evidence).
    """
    flagged = {key: untrusted.quote(value) for key, value in values.items()
               if isinstance(value, str) and untrusted.is_instruction_like(value)}
    return dict(values, **flagged) if flagged else values


def _describe(error: ValidationError, data: dict) -> str:
    """Return the first validation error, naming the rule (by name and index) and the field."""
    detail = error.errors()[0]
    loc = list(detail['loc'])
    message = validation_text.message(detail, ('Value error, ',))
    rules = data.get('rules') if isinstance(data, dict) else None
    if len(loc) >= 2 and loc[0] == 'rules' and isinstance(loc[1], int):
        index = loc[1]
        raw = rules[index] if isinstance(rules, list) and index < len(rules) else None
        name = raw.get('name') if isinstance(raw, dict) else None
        rest = [str(part) for part in loc[2:] if part not in ('diagnostic', 'log', 'telemetry')]
        label = f'rule {name!r} (rules[{index}])' if name else f'rules[{index}]'
        if detail['type'] in ('union_tag_invalid', 'union_tag_not_found'):
            return f'{label}, field source: must be diagnostic, log or telemetry'
        if rest:
            return f'{label}, field {".".join(rest)}: {message}'
        return f'{label}: {message}'
    return validation_text.describe(detail, prefix='field ', leads=('Value error, ',))

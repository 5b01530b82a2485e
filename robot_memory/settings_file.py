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
memory_node's parameters as specs, checked as a whole, read from a file and written to one.

The node declares a ROS 2 parameter for each :class:`ParameterSpec` returned by
:func:`parameter_specs` and validates candidate values with :func:`validate_parameters`
both at start-up and on ``ros2 param set``; an invalid value is refused with a reason
that names the parameter. The same specs document ``config/robot_memory.yaml``
(:func:`render_parameters_file`; a test checks that every parameter is there) and are pure
Python (no rclpy). The CLI's ``--config`` reads that file with :func:`settings_from_file`: the
same values through the same validation, so a file the node would refuse is refused by the
CLI with the same reason. The models the specs come from are in ``robot_memory.settings``.
"""

import dataclasses
import json
import pathlib
import textwrap
from typing import Any

from pydantic import ValidationError
import yaml

from robot_memory.common import validation_text
from robot_memory.common.fileio import read_settings_text
from robot_memory.errors import MemoryFileError
from robot_memory.evidence.proposal_queue import ProposalSettings
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.rcan.lifecycle import LifecycleConfig
from robot_memory.settings import DreamConfig
from robot_memory.settings import NodeSettings


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """
    One ROS 2 parameter: its name, default, description and whether it may change.

    ``constraints`` says every rule in words; ``bounds`` is the inclusive (low, high)
    range when the value has one (published as a ROS floating_point_range /
    integer_range), and ``other_constraints`` the rules a range cannot say (exclusive
    bounds, patterns).
    """

    name: str
    default: Any
    description: str
    read_only: bool
    constraints: str
    bounds: Any = None
    other_constraints: str = ''


_BOUNDS = (('ge', '>='), ('gt', '>'), ('le', '<='), ('lt', '<'))


def _limits(field) -> dict:
    """Return the field's numeric limits and pattern: {'ge': 0.0, 'le': 1.0, 'pattern': ...}."""
    limits = {}
    for item in field.metadata:
        for attribute in ('ge', 'gt', 'le', 'lt', 'pattern'):
            value = getattr(item, attribute, None)
            if value is not None:
                limits[attribute] = value
    return limits


def _describe(limits: dict, names=('ge', 'gt', 'le', 'lt', 'pattern')) -> str:
    parts = [f'{symbol} {limits[name]}' for name, symbol in _BOUNDS
             if name in limits and name in names]
    if 'pattern' in limits and 'pattern' in names:
        parts.append(f'matches {limits["pattern"]}')
    return ', '.join(parts)


def _bounds(limits: dict):
    """(low, high) when both bounds are inclusive (a ROS range has no exclusive bounds)."""
    if 'ge' in limits and 'le' in limits and 'gt' not in limits and 'lt' not in limits:
        return limits['ge'], limits['le']
    return None


def allowed(spec: ParameterSpec) -> str:
    """Return the allowed values of a parameter in words, e.g. 'from 0.0 to 1.0'."""
    if spec.bounds is not None:
        text = f'from {spec.bounds[0]} to {spec.bounds[1]}'
        return f'{text}, {spec.other_constraints}' if spec.other_constraints else text
    return spec.constraints


def _specs_of(model, prefix: str = '', skip=()) -> list:
    specs = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        default = field.get_default(call_default_factory=True)
        extra = field.json_schema_extra or {}
        limits = _limits(field)
        bounds = _bounds(limits)
        other = _describe(limits, ('pattern',) if bounds else ('ge', 'gt', 'le', 'lt', 'pattern'))
        specs.append(ParameterSpec(prefix + name, default, field.description or '',
                                   bool(extra.get('read_only')), _describe(limits), bounds,
                                   other))
    return specs


FEDERATION = 'federation.'
PROPOSALS = 'proposals.'
# FederationPolicy fields whose Python type has no ROS parameter form: their ROS default
# and description.
_FEDERATION_ROS = {
    'allowed_peers': ([], 'RRNs of the peers whose memory is accepted, e.g. '
                          '["RRN-000000000002"]; empty: accept none'),
    'private_key_path': ('', "Path of this robot's Ed25519 private key (PEM, mode 0600) that "
                             'signs what it shares; empty: payloads are not signed'),
    'peer_public_keys': ([], 'Public keys of peers, each "RRN=path of its Ed25519 public key '
                             '(PEM)", e.g. "RRN-000000000002=/etc/robot_memory/b.pub"'),
}


def _federation_specs() -> list:
    specs = []
    for spec in _specs_of(FederationPolicy, FEDERATION):
        ros = _FEDERATION_ROS.get(spec.name[len(FEDERATION):])
        if ros is not None:
            spec = dataclasses.replace(spec, default=ros[0], description=ros[1])
        specs.append(spec)
    return specs


def parameter_specs() -> list:
    """Every memory_node parameter: node settings, lifecycle, dream, then federation."""
    return (_specs_of(NodeSettings) + _specs_of(LifecycleConfig)
            + _specs_of(DreamConfig, 'dream.', skip=('lifecycle', 'rrn'))
            + _federation_specs() + _specs_of(ProposalSettings, PROPOSALS))


@dataclasses.dataclass(frozen=True)
class Settings:
    """The validated settings of one node."""

    node: NodeSettings
    dream: DreamConfig
    federation: FederationPolicy = FederationPolicy()
    proposals: ProposalSettings = ProposalSettings()

    @property
    def lifecycle(self) -> LifecycleConfig:
        """Return the RCAN lifecycle constants."""
        return self.dream.lifecycle


def _reason(error: ValidationError, prefix: str = '') -> str:
    detail = error.errors()[0]
    where = ', '.join(_parameter(path) for path in validation_text.places(detail, prefix)) \
        or prefix + 'settings'
    message = validation_text.message(detail, validation_text.VALIDATOR_LEADS)
    spec = _spec_named(where)
    if spec is not None and detail['type'] in _RANGE_ERRORS:
        return (f'{where}: {detail["input"]!r} is out of range ({message[:1].lower()}'
                f'{message[1:]}); allowed: {allowed(spec)}')
    return f'{where}: {message}'


def _parameter(path: str) -> str:
    """Return the parameter a model path names (DreamConfig holds the top-level lifecycle ones)."""
    return path.removeprefix('dream.lifecycle.')


# pydantic error types of a value outside its numeric bounds.
_RANGE_ERRORS = {'greater_than', 'greater_than_equal', 'less_than', 'less_than_equal'}


def _spec_named(name: str):
    for spec in parameter_specs():
        if spec.name == name:
            return spec
    return None


def validate_parameters(values: dict) -> Settings:
    """Validate a flat {name: value} of parameters; raise ValueError naming the bad one."""
    known = {spec.name for spec in parameter_specs()}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f'{unknown[0]}: unknown parameter (see config/robot_memory.yaml for '
                         'the list)')
    node_values = {key: value for key, value in values.items() if key in NodeSettings.model_fields}
    life_values = {key: value for key, value in values.items()
                   if key in LifecycleConfig.model_fields}
    dream_values = {key[len('dream.'):]: value for key, value in values.items()
                    if key.startswith('dream.')}
    try:
        node = NodeSettings(**node_values)
    except ValidationError as error:
        raise ValueError(_reason(error)) from None
    try:
        lifecycle = LifecycleConfig(**life_values)
    except ValidationError as error:
        raise ValueError(_reason(error)) from None
    try:
        dream = DreamConfig(lifecycle=lifecycle, rrn=node.rrn, **dream_values)
    except ValidationError as error:
        raise ValueError(_reason(error, 'dream.')) from None
    federation_values = {key[len(FEDERATION):]: value for key, value in values.items()
                         if key.startswith(FEDERATION)}
    try:
        federation = FederationPolicy(**_federation_fields(federation_values))
    except ValidationError as error:
        raise ValueError(_reason(error, FEDERATION)) from None
    proposal_values = {key[len(PROPOSALS):]: value for key, value in values.items()
                       if key.startswith(PROPOSALS)}
    try:
        proposals = ProposalSettings(**proposal_values)
    except ValidationError as error:
        raise ValueError(_reason(error, PROPOSALS)) from None
    return Settings(node, dream, federation, proposals)


def read_parameters_file(path, node_name: str = 'robot_memory') -> dict:
    """
    Return the parameters a ROS 2 parameters file gives ``node_name``: flat, nested keys dotted.

    The ``ros__parameters`` of ``/**`` apply first, then those of ``node_name`` (or
    ``/node_name``), name by name, as rcl reads them at the node's start.
    """
    path = pathlib.Path(path).expanduser()
    try:
        data = yaml.load(read_settings_text(path), Loader=yaml.CSafeLoader) or {}
    except OSError as error:
        raise MemoryFileError(f'cannot read the config file: {error.strerror}', path) from None
    except yaml.YAMLError as error:
        raise MemoryFileError(f'config file is not valid YAML: {error}', path) from None
    if not isinstance(data, dict):
        raise MemoryFileError('config file must map node names to ros__parameters', path)
    merged = {}
    for key in ('/**', node_name, '/' + node_name):
        section = data.get(key)
        if isinstance(section, dict) and isinstance(section.get('ros__parameters'), dict):
            merged.update(flat_parameters(section['ros__parameters']))
    return merged


def settings_from_file(path, node_name: str = 'robot_memory') -> Settings:
    """
    Return the Settings a parameters file gives memory_node, validated as at its start-up.

    The CLI's ``--config`` reads the node's file this way. Keys that are not parameters of
    memory_node (``use_sim_time``, another node's under ``/**``) are left alone, as the node
    leaves them; an invalid value is refused with the parameter, the value and what is
    allowed.
    """
    known = {spec.name for spec in parameter_specs()}
    values = {name: value for name, value in read_parameters_file(path, node_name).items()
              if name in known}
    try:
        return validate_parameters(values)
    except ValueError as error:
        raise MemoryFileError(f'invalid setting {error}', pathlib.Path(path).expanduser()) \
            from None


def _federation_fields(values: dict) -> dict:
    """ROS parameter values of the federation policy as FederationPolicy fields."""
    fields = dict(values)
    if 'private_key_path' in fields:
        fields['private_key_path'] = fields['private_key_path'] or None
    if 'allowed_peers' in fields and isinstance(fields['allowed_peers'], list):
        fields['allowed_peers'] = tuple(item.strip() if isinstance(item, str) else item
                                        for item in fields['allowed_peers'])
    keys = fields.get('peer_public_keys')
    if isinstance(keys, list):
        mapping = {}
        for item in keys:
            rrn, separator, path = str(item).partition('=')
            if not separator or not rrn.strip() or not path.strip():
                raise ValueError(f'{FEDERATION}peer_public_keys: {item!r} is not "RRN=path", e.g. '
                                 '"RRN-000000000002=/etc/robot_memory/b.pub"')
            if rrn.strip() in mapping:
                raise ValueError(f'{FEDERATION}peer_public_keys: {rrn.strip()} is listed twice')
            mapping[rrn.strip()] = path.strip()
        fields['peer_public_keys'] = mapping
    return fields


_HEADER = """\
# Parameters of memory_node (robot_memory). Every parameter is listed here with what it
# means and its allowed values; an invalid value is refused at start-up or on `ros2 param set`
# with a reason. [read-only] parameters take effect at start-up only.
#
#   ros2 launch robot_memory robot_memory_launch.py params_file:=/path/to/this.yaml
#
# The lifecycle constants (reinforce_step ... max_prune_fraction) are RCAN Robot Memory Schema
# 1.0 defaults. robot-memory (the CLI) reads this file with --config, validated as here.
# (Generated from robot_memory/settings.py: python -m robot_memory.settings_file > this file.)
/**:
  ros__parameters:
"""
_SECTIONS = {'reinforce_step': '--- entry lifecycle (RCAN §4) and the context block (§5) ---',
             'dream.': '--- autodream ---',
             FEDERATION: '--- peer federation (RCAN §6) ---',
             PROPOSALS: "--- proposals: apply each source's changes, or queue them for "
                        'approval ---'}


def flat_parameters(mapping: dict, prefix: str = '') -> dict:
    """Return a parameters file's ``ros__parameters`` as rcl reads them, nested keys dotted."""
    flat = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            flat.update(flat_parameters(value, f'{prefix}{key}.'))
        else:
            flat[prefix + key] = value
    return flat


def _yaml_value(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def render_parameters_file() -> str:
    """Return the text of config/robot_memory.yaml: every parameter, its default and description."""
    lines = [_HEADER.rstrip('\n')]
    group = ''
    for spec in parameter_specs():
        prefix = spec.name.rpartition('.')[0]
        prefix = prefix + '.' if prefix else ''
        section = _SECTIONS.get(spec.name) or (_SECTIONS.get(prefix) if prefix != group else None)
        indent = '    ' + '  ' * bool(prefix)
        if section:
            lines += ['', f'    # {section}']
            if prefix:
                lines.append(f'    {prefix.rstrip(".")}:')
        group = prefix
        comment = spec.description.rstrip('.') + '.'
        if spec.constraints:
            comment += f' Allowed: {spec.constraints}.'
        if spec.read_only:
            comment += ' [read-only]'
        lines += textwrap.wrap(comment, width=99, initial_indent=indent + '# ',
                               subsequent_indent=indent + '# ')
        lines.append(f'{indent}{spec.name[len(prefix):]}: {_yaml_value(spec.default)}')
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    print(render_parameters_file(), end='')

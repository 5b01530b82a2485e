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

"""Node parameters: one declaration, validated with reasons, documented in the config file."""

import ast

import pytest
import yaml

from robot_memory.errors import MemoryFileError
from robot_memory.settings_file import flat_parameters
from robot_memory.settings_file import parameter_specs
from robot_memory.settings_file import read_parameters_file
from robot_memory.settings_file import render_parameters_file
from robot_memory.settings_file import settings_from_file
from robot_memory.settings_file import validate_parameters
from support.paths import REPO


def test_every_parameter_is_in_the_config_file_with_its_default_and_a_comment():
    path = REPO / 'config' / 'robot_memory.yaml'
    text = path.read_text(encoding='utf-8')
    values = flat_parameters(yaml.safe_load(text)['/**']['ros__parameters'])
    specs = {spec.name: spec for spec in parameter_specs()}
    assert set(values) == set(specs)
    lines = text.splitlines()
    for name, spec in specs.items():
        assert values[name] == spec.default, name
        assert spec.description, name
        leaf = name.split('.')[-1]
        index = next(i for i, line in enumerate(lines) if line.strip().startswith(leaf + ':'))
        assert lines[index - 1].strip().startswith('#'), f'{name} has no comment above it'
    assert validate_parameters(values).node.rrn == 'RRN-UNSET'


def test_the_config_file_is_exactly_what_the_specs_render():
    # Regenerate with: python -m robot_memory.settings_file > config/robot_memory.yaml
    assert (REPO / 'config' / 'robot_memory.yaml').read_text(encoding='utf-8') == \
        render_parameters_file()


def test_the_federation_policy_comes_from_ros_parameters():
    settings = validate_parameters({
        'federation.allowed_peers': ['RRN-000000000002'],
        'federation.peer_public_keys': ['RRN-000000000002 = /keys/b.pub'],
        'federation.private_key_path': '', 'peer_nodes': ['/robot_b/robot_memory'],
        'time_origin': '2026-01-01T00:00:00Z'})
    policy = settings.federation
    assert policy.allowed_peers == ('RRN-000000000002',)
    assert str(policy.peer_public_keys['RRN-000000000002']) == '/keys/b.pub'
    assert policy.private_key_path is None
    assert settings.node.origin().isoformat() == '2026-01-01T00:00:00+00:00'


def test_the_demo_parameters_are_valid():
    values = flat_parameters(yaml.safe_load((REPO / 'config' / 'demo.yaml').read_text())['/**']
                             ['ros__parameters'])
    settings = validate_parameters(values)
    assert settings.node.telemetry() == [('/battery_state', 'sensor_msgs/msg/BatteryState')]


@pytest.mark.parametrize('values, named', [
    ({'decay_per_day': -1.0}, 'decay_per_day'),
    ({'dream.quiet_period_days': 0.0}, 'dream.quiet_period_days'),
    ({'telemetry_topics': ['/battery_state']}, 'telemetry_topics'),
    ({'telemetry_topics': ['/a:x/msg/A', '/a:x/msg/B']}, 'listed twice'),
    ({'dream_time': '25:00'}, 'dream_time'),
    ({'dream_period_s': 0.5}, 'dream_period_s'),
    ({'no_such_parameter': 1}, 'no_such_parameter'),
    ({'inject_min': 0.95}, 'inject_min, band_medium: thresholds must satisfy'),
    ({'rrn': '../etc'}, 'rrn'),
    ({'peer_nodes': ['robot_b']}, 'peer_nodes'),
    ({'peer_nodes': ['/b/robot_memory', '/b/robot_memory']}, 'listed twice'),
    ({'peer_sync_period_s': 0.2}, 'peer_sync_period_s'),
    ({'service_max_trust': 'root'}, 'service_max_trust'),
    ({'time_origin': 'yesterday'}, 'time_origin'),
    ({'federation.allowed_peers': ['../etc']}, 'allowed_peers'),
    ({'federation.peer_public_keys': ['RRN-000000000002']}, 'RRN=path'),
    ({'federation.max_entries': 0}, 'federation.max_entries'),
    ({'federation.require_signatures': True},
     'federation.require_signatures, federation.private_key_path: require_signatures is on'),
])
def test_invalid_values_are_refused_with_a_reason_naming_them(values, named):
    with pytest.raises(ValueError, match=named.replace('.', r'\.')):
        validate_parameters(values)


def test_the_launch_file_declares_its_five_arguments():
    tree = ast.parse((REPO / 'launch' / 'robot_memory_launch.py').read_text())
    declared = [node.args[0].value for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, 'id', '') ==
                'DeclareLaunchArgument']
    assert declared == ['namespace', 'rrn', 'memory_file', 'params_file', 'color']


def test_inclusive_limits_are_ranges_and_the_rest_stays_text():
    specs = {spec.name: spec for spec in parameter_specs()}
    assert specs['decay_per_day'].bounds == (0.0, 1.0)
    assert specs['decay_per_day'].other_constraints == ''
    assert specs['batch_size'].bounds == (1, 100_000)
    # A ROS range has no exclusive bound: "> 0" stays words.
    assert specs['retention_days'].bounds is None
    assert specs['retention_days'].other_constraints == '> 0.0, <= 3650.0'
    assert specs['rrn'].bounds is None and specs['rrn'].other_constraints.startswith('matches')
    assert all(spec.bounds is None or spec.bounds[0] <= spec.default <= spec.bounds[1]
               for spec in specs.values())


@pytest.mark.parametrize('values, reason', [
    ({'decay_per_day': 1.5}, 'decay_per_day: 1.5 is out of range (input should be less than or '
                             'equal to 1); allowed: from 0.0 to 1.0'),
    ({'batch_size': 0}, 'batch_size: 0 is out of range (input should be greater than or equal '
                        'to 1); allowed: from 1 to 100000'),
    ({'retention_days': 0.0}, 'retention_days: 0.0 is out of range (input should be greater '
                              'than 0); allowed: > 0.0, <= 3650.0'),
    ({'dream.initial_min': 0.0}, 'dream.initial_min: 0.0 is out of range (input should be '
                                 'greater than or equal to 0.1); allowed: from 0.1 to 1.0'),
])
def test_an_out_of_range_value_is_refused_naming_it_the_value_and_the_range(values, reason):
    with pytest.raises(ValueError) as refused:
        validate_parameters(values)
    assert str(refused.value) == reason


# --------------------------------------------------------------------------- the CLI's --config

def params_file(tmp_path, text: str):
    path = tmp_path / 'robot_memory.yaml'
    path.write_text(text, encoding='utf-8')
    return path


def test_a_parameters_file_is_read_as_the_node_reads_it(tmp_path):
    path = params_file(tmp_path, """\
/**:
  ros__parameters:
    use_sim_time: false
    decay_per_day: 0.02
    dream:
      quiet_period_days: 5.0
      initial_max: 0.4
    proposals:
      peers: propose
robot_memory:
  ros__parameters:
    dream:
      quiet_period_days: 6.0
    proposals.agents: propose
    substrate_encrypt_from: high
other_node:
  ros__parameters:
    decay_per_day: 0.5
""")
    settings = settings_from_file(path)
    # Name by name, the node's own section over /** (a section does not replace a section).
    assert settings.dream.quiet_period_days == 6.0 and settings.dream.initial_max == 0.4
    assert settings.lifecycle.decay_per_day == 0.02
    assert (settings.proposals.distiller, settings.proposals.agents,
            settings.proposals.peers) == ('apply', 'propose', 'propose')
    assert settings.node.substrate_encrypt_from == 'high'
    assert read_parameters_file(path)['use_sim_time'] is False  # not ours: left alone
    assert settings_from_file(REPO / 'config' / 'robot_memory.yaml') == \
        validate_parameters({})


@pytest.mark.parametrize('text, reason', [
    ('/**:\n  ros__parameters:\n    dream:\n      quiet_period_days: -1\n',
     r'invalid setting dream\.quiet_period_days: -1 is out of range .*allowed: '),
    ('/**:\n  ros__parameters:\n    proposals:\n      distiller: "yes"\n',
     r'invalid setting proposals\.distiller: .*propose'),
    ('/**:\n  ros__parameters:\n    inject_min: 0.95\n',
     'invalid setting inject_min, band_medium: thresholds must satisfy'),
    ('/**:\n  ros__parameters:\n    telemetry_topics: ["/battery_state"]\n',
     r'invalid setting telemetry_topics: .*"TOPIC:pkg/msg/Type"'),
    ('/**:\n  ros__parameters:\n    decay_per_day: [0.1\n', 'config file is not valid YAML'),
    ('- a list\n', 'config file must map node names to ros__parameters'),
])
def test_a_bad_parameters_file_is_refused_naming_the_file_and_the_setting(
        tmp_path, text, reason):
    path = params_file(tmp_path, text)
    with pytest.raises(MemoryFileError, match=reason) as error:
        settings_from_file(path)
    assert str(error.value).startswith(f'{path}: ')


def test_a_missing_parameters_file_is_named(tmp_path):
    with pytest.raises(MemoryFileError, match='cannot read the config file: No such file'):
        settings_from_file(tmp_path / 'typo.yaml')


def test_the_cli_refuses_a_file_the_node_would_refuse(tmp_path, capsys):
    from robot_memory.cli import main as cli
    path = params_file(tmp_path, '/**:\n  ros__parameters:\n    dream_time: "25:00"\n')
    memory = tmp_path / 'robot-memory.md'
    for command in (['show'], ['dream'], ['learn', 'Ben prefers tea']):
        assert cli.main(command + ['--file', str(memory), '--config', str(path)]) == 1
        err = capsys.readouterr().err
        assert f'{path}: invalid setting dream_time: ' in err, err
        assert '"HH:MM"' in err
    assert sorted(item.name for item in tmp_path.iterdir()) == ['robot_memory.yaml']


@pytest.mark.parametrize('prune_min, initial_min', [('0.1', '0.1'), ('0.2', '0.15')])
def test_validate_refuses_an_initial_confidence_at_or_below_the_prune_line(
        tmp_path, capsys, prune_min, initial_min):
    """Issue 26.6: a new entry must not start where a prune after recent_hours removes it."""
    from robot_memory.cli import main as cli
    config = tmp_path / 'robot_memory.yaml'
    config.write_text(f'/**:\n  ros__parameters:\n    prune_min: {prune_min}\n    dream:\n'
                      f'      initial_min: {initial_min}\n', encoding='utf-8')
    memory = REPO / 'examples' / 'robot-memory.md'
    code = cli.main(['validate', '--config', str(config), '--file', str(memory)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert (f'{config}: invalid setting dream.initial_min, prune_min: initial_min '
            f'({initial_min}) must be above prune_min ({prune_min}): a new entry would start '
            'at or under the prune line' in err), err
    assert 'raise initial_min or lower prune_min (the defaults are 0.15 and 0.1)' in err, err


# Settings each valid alone that do not fit together, and the parameters each refusal names.
CROSS_FIELD = [
    ({'inject_min': 0.95}, 'inject_min, band_medium'),
    ({'prune_min': 0.35}, 'prune_min, inject_min'),
    ({'band_medium': 0.9}, 'band_medium, band_high'),
    ({'dream.initial_min': 0.6, 'dream.initial_max': 0.5}, 'dream.initial_min, dream.initial_max'),
    ({'dream.initial_min': 0.1}, 'dream.initial_min, prune_min'),
    ({'federation.require_signatures': True},
     'federation.require_signatures, federation.private_key_path'),
    ({'federation.require_signatures': True, 'federation.private_key_path': '/keys/a.pem',
      'federation.allowed_peers': ['RRN-000000000002']},
     'federation.require_signatures, federation.peer_public_keys'),
]


def nested_parameters(values: dict) -> str:
    """Return a parameters file of the flat ``values``, dotted names nested as rcl reads them."""
    tree: dict = {}
    for name, value in values.items():
        *groups, leaf = name.split('.')
        node = tree
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = value
    return yaml.safe_dump({'/**': {'ros__parameters': tree}})


@pytest.mark.parametrize('values, named', CROSS_FIELD)
def test_a_cross_field_refusal_names_the_parameters_to_change_from_every_entry_point(
        tmp_path, capsys, values, named):
    """Node parameters, the file at start-up, robot-memory validate: the same names."""
    from robot_memory.cli import main as cli
    assert set(named.split(', ')) <= {spec.name for spec in parameter_specs()}
    with pytest.raises(ValueError) as error:
        validate_parameters(values)
    assert str(error.value).startswith(f'{named}: '), error.value
    assert 'settings:' not in str(error.value)
    path = params_file(tmp_path, nested_parameters(values))
    with pytest.raises(MemoryFileError) as error:
        settings_from_file(path)
    assert str(error.value).startswith(f'{path}: invalid setting {named}: '), error.value
    code = cli.main(['validate', '--config', str(path),
                     '--file', str(REPO / 'examples' / 'robot-memory.md')])
    err = capsys.readouterr().err
    assert code == 1 and f'{path}: invalid setting {named}: ' in err, err


def test_a_field_refusal_names_its_field_once():
    with pytest.raises(ValueError) as error:
        validate_parameters({'federation.allowed_peers': ['../etc']})
    assert str(error.value) == ("federation.allowed_peers: '../etc' is not an RRN (e.g. "
                                'RRN-000000000005)')


def test_validate_accepts_the_default_settings(capsys):
    """Issue 26.6: the shipped parameters put a new entry above the prune line."""
    from robot_memory.cli import main as cli
    code = cli.main(['validate', '--config', str(REPO / 'config' / 'robot_memory.yaml'),
                     '--file', str(REPO / 'examples' / 'robot-memory.md')])
    out, err = capsys.readouterr()
    assert code == 0 and err == '', err
    assert 'valid parameters' in out, out
    settings = settings_from_file(REPO / 'config' / 'robot_memory.yaml')
    assert settings.dream.initial_min == 0.15 > settings.lifecycle.prune_min

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
memory_node's parameters as ROS tools see them: real ranges, and refusals that say why.

``ros2 param describe`` and rqt_reconfigure read ``~/describe_parameters``; ``ros2 param
set`` calls ``~/set_parameters``. Both are called here on a real node over DDS.
"""

import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.msg import ParameterValue
from rcl_interfaces.srv import DescribeParameters
from rcl_interfaces.srv import GetParameters
from rcl_interfaces.srv import SetParameters

from robot_memory.settings_file import parameter_specs
from support.ros_harness import NodeProcess
from support.ros_probe import call
from support.ros_probe import wait_ready


@pytest.fixture(scope='module')
def node(tmp_path_factory, probe):
    """One memory_node with its default parameters."""
    process = NodeProcess(tmp_path_factory.mktemp('params'), 'it_params').start()
    try:
        wait_ready(probe, process)
        yield process
    finally:
        assert process.stop() == 0, process.log()


def _describe(probe, node, names) -> dict:
    reply = call(probe, DescribeParameters, f'{node.prefix}/describe_parameters',
                 DescribeParameters.Request(names=list(names)))
    return {descriptor.name: descriptor for descriptor in reply.descriptors}


def _set(probe, node, name, value):
    kind, field = ((ParameterType.PARAMETER_INTEGER, 'integer_value') if isinstance(value, int)
                   else (ParameterType.PARAMETER_DOUBLE, 'double_value'))
    request = SetParameters.Request(parameters=[ParameterMsg(
        name=name, value=ParameterValue(type=kind, **{field: value}))])
    [result] = call(probe, SetParameters, f'{node.prefix}/set_parameters', request).results
    return result


def test_every_inclusive_limit_is_published_as_a_range(node, probe):
    specs = {spec.name: spec for spec in parameter_specs()}
    described = _describe(probe, node, specs)
    assert set(described) == set(specs)
    for name, spec in specs.items():
        descriptor = described[name]
        ranges = list(descriptor.floating_point_range) + list(descriptor.integer_range)
        if spec.bounds is None:
            assert not ranges, name
            assert descriptor.additional_constraints == spec.other_constraints, name
            continue
        [published] = ranges
        assert (published.from_value, published.to_value) == pytest.approx(spec.bounds), name
        assert descriptor.additional_constraints == spec.other_constraints, name
    decay = described['decay_per_day'].floating_point_range[0]
    assert (decay.from_value, decay.to_value, decay.step) == (0.0, 1.0, 0.0)
    batch = described['batch_size'].integer_range[0]
    assert (batch.from_value, batch.to_value, batch.step) == (1, 100_000, 1)
    # An exclusive bound has no range form: it stays words.
    assert described['retention_days'].additional_constraints == '> 0.0, <= 3650.0'


@pytest.mark.parametrize('name, value, words', [
    ('decay_per_day', 1.5, ('1.0',)),
    ('token_budget', 0, ('1000000',)),
    ('reinforce_step', 0.0, ('> 0.0',)),
    ('dream.initial_min', 0.05, ('0.1',)),
])
def test_a_refused_set_names_the_parameter_the_value_and_the_allowed_range(node, probe, name,
                                                                           value, words):
    result = _set(probe, node, name, value)
    assert not result.successful
    for word in (name, str(value), *words):
        assert word in result.reason, result.reason
    kept = call(probe, GetParameters, f'{node.prefix}/get_parameters',
                GetParameters.Request(names=[name])).values[0]
    default = {spec.name: spec.default for spec in parameter_specs()}[name]
    assert (kept.integer_value if isinstance(value, int) else kept.double_value) == default


def test_an_initial_confidence_at_the_prune_line_is_refused(node, probe):
    """Issue 26.6: a new entry must start above prune_min, or it is pruned after a day."""
    result = _set(probe, node, 'dream.initial_min', 0.1)
    assert not result.successful
    assert result.reason.startswith('dream.initial_min, prune_min: initial_min (0.1) must be '
                                    'above prune_min (0.1)'), result.reason
    assert 'raise initial_min or lower prune_min' in result.reason, result.reason
    kept = call(probe, GetParameters, f'{node.prefix}/get_parameters',
                GetParameters.Request(names=['dream.initial_min'])).values[0]
    assert kept.double_value == 0.15


def test_a_value_inside_the_range_is_taken(node, probe):
    assert _set(probe, node, 'decay_per_day', 0.07).successful
    value = call(probe, GetParameters, f'{node.prefix}/get_parameters',
                 GetParameters.Request(names=['decay_per_day'])).values[0]
    assert value.double_value == pytest.approx(0.07)


def test_an_out_of_range_start_up_value_stops_the_node_naming_it(tmp_path):
    node = NodeProcess(tmp_path, 'it_param_range', decay_per_day=-1.0).start()
    assert node.wait_exit() == 2
    assert ('invalid parameter decay_per_day: -1.0 is out of range; allowed: from 0.0 to 1.0'
            in node.log()), node.log()

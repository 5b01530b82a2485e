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
What memory_node loads with its default settings: only what its enabled features need.

A real MemoryNode is built in a child process (rclpy, the installed package, a memory file
and an evidence database on disk); the modules it has imported then are what it holds for
as long as it runs. Vectors, signatures (cryptography), MCP, plotting and sqlite-utils are
not among them, nor the dream's and undo's code until a dream or an undo, nor the fleet's
(Zenoh, psycopg) without fleet_connect, nor what the libraries it uses load but it never
calls (ROS's code generator, importlib.metadata): each costs megabytes a small robot
computer has better uses for.
"""

import json
import os
import subprocess
import sys

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.schema import new_entry

_SCRIPT = """
import json, sys
from robot_memory.dependencies import skip_pydantic_plugins
skip_pydantic_plugins()  # as bin/memory_node does, before anything builds a model
import rclpy
from robot_memory.ros import node
memory, database, namespace = sys.argv[1:4]
rclpy.init(args=['--ros-args', '-r', '__ns:=/' + namespace, '-p', 'memory_file:=' + memory,
                 '-p', 'rrn:=RRN-000000000001', '-p', 'dream_time:=""',
                 '-p', 'database_file:=' + database])
built = node.MemoryNode()
print(json.dumps(sorted(sys.modules)))
built.destroy_node()
rclpy.shutdown()
"""
UNNEEDED = {'sqlite_utils', 'cryptography', 'mcp', 'matplotlib', 'onnxruntime', 'tokenizers',
            'pandas', 'zenoh', 'psycopg'}
# Loaded by the libraries the node uses, never called by it: ROS's code generator (lark, empy:
# rosidl_generator_py's __init__ imports it; ros/type_support.py) and importlib.metadata
# (email, zipfile: pydantic's plugin loader and a distribution lookup). 4.8 MB of the node.
NEVER_CALLED = {'lark', 'em', 'rosidl_generator_py.generate_py_impl', 'importlib.metadata',
                'email', 'zipfile'}
# Parts of this package the node needs at night (a dream), on request (an undo), or with
# fleet_connect set (the fleet).
ON_DEMAND = {'robot_memory.dream.autodream', 'robot_memory.dream.distiller',
             'robot_memory.review.undo', 'robot_memory.ros.fleet_link'}


# Unset, or set by a parent (robot-memory, or an earlier command of a test run): the same.
@pytest.mark.parametrize('inherited', [None, '__all__'])
def test_the_node_loads_no_library_its_default_features_do_not_use(tmp_path, inherited):
    import datetime as dt
    now = dt.datetime.now(UTC)
    document = new_document('RRN-000000000001', now)
    document.entries = [new_entry('hardware_observation', 'Left wheel encoder intermittent',
                                  0.9, now)]
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    memory.save(document)
    env = {name: value for name, value in os.environ.items()
           if name != 'PYDANTIC_DISABLE_PLUGINS'}
    env['ROBOT_MEMORY_EMBEDDER'] = 'auto'
    if inherited is not None:
        env['PYDANTIC_DISABLE_PLUGINS'] = inherited
    done = subprocess.run(
        [sys.executable, '-P', '-c', _SCRIPT, str(memory.path), str(tmp_path / 'evidence.db'),
         f'footprint_{os.getpid()}'], capture_output=True, text=True, timeout=120,
        env=env, cwd=tmp_path)  # the installed package
    assert done.returncode == 0, done.stderr[-3000:]
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert 'robot_memory.ros.node' in modules and 'rclpy' in modules  # it really ran
    assert (tmp_path / 'evidence.db').exists()  # and opened (created, migrated) its store
    loaded = {name.split('.')[0] for name in modules} & UNNEEDED
    assert not loaded, sorted(loaded)
    assert not set(modules) & ON_DEMAND, sorted(set(modules) & ON_DEMAND)
    assert not set(modules) & NEVER_CALLED, sorted(set(modules) & NEVER_CALLED)

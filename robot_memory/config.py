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
Reading robot_memory settings from a ROS 2 parameters file (config/robot_memory.yaml).

The node and the CLI share one file: the ``ros__parameters`` of the node (or of
``/**``) hold the lifecycle constants; unknown keys are left to the node.
"""

import pathlib

from pydantic import ValidationError
import yaml

from robot_memory.errors import MemoryFileError
from robot_memory.lifecycle import LifecycleConfig


def read_parameters(path, node_name: str = 'robot_memory') -> dict:
    """Return the merged ``ros__parameters`` for ``node_name`` (and ``/**``) from a params file."""
    path = pathlib.Path(path).expanduser()
    try:
        data = yaml.load(path.read_text(encoding='utf-8'), Loader=yaml.CSafeLoader) or {}
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
            merged.update(section['ros__parameters'])
    return merged


def lifecycle_config(parameters: dict) -> LifecycleConfig:
    """Build a validated LifecycleConfig from the lifecycle keys found in ``parameters``."""
    fields = {key: parameters[key] for key in LifecycleConfig.model_fields if key in parameters}
    try:
        return LifecycleConfig(**fields)
    except ValidationError as error:
        detail = error.errors()[0]
        where = '.'.join(str(part) for part in detail['loc']) or 'lifecycle settings'
        raise ValueError(f'invalid setting {where}: {detail["msg"]}') from None

"""robot_memory: operational memory for ROS 2 robots, one folder per concept."""
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

# The folders, top layer first; each imports only from its own folder and those below it
# (setup.cfg's import-linter contract, test/project/test_layers.py): cli/ and bags/ (commands,
# recordings), ros/ (memory_node: the only place that imports rclpy), mcp/ and web/ (the
# agents' server, the operator's page), review/ (proposals, undo, edits), dream/, settings.py,
# fleet/ and federation/, substrate/ (the typed memory), evidence/, rcan/ (robot-memory.md),
# common/, and at the base locations.py, dependencies.py and errors.py. The map of every
# module and of the modules each concept spans: docs/architecture.md.

__version__ = '0.1.0'

"""Recordings as input: rosbag2 (MCAP, sqlite3) and ROS 1 bags, read without a ROS install."""
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

# ``read`` opens recordings through the ``rosbags`` library (the optional extra
# ``robot_memory[bags]``), ``replay`` feeds their messages to the evidence store and dreams
# at the recorded nights (``robot-memory replay``'s command is ``cli/replay_command.py``; the
# bags the tests replay are written by ``robot_memory.testing.bag_writer``). Nothing here is
# imported by memory_node or by ``robot-memory show``.

"""Data and servers for the tests and the benchmarks, never imported by the product."""
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

# ``bag_writer`` writes recordings (MCAP, sqlite3, ROS 1) from observations, with the
# ``rosbags`` library of the extra ``robot_memory[bags]``; ``test/`` and ``bench/`` both import
# it. The layers contract (setup.cfg) keeps every other module from importing this folder.
# ``fleet_servers`` starts the fleet's servers (PostgreSQL, Zenoh routers, the store) as child
# processes, for test/fleet and bench/bench_fleet.py.

"""Evidence: what the robot reported, what counts, and where it is kept."""
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

# Observations as plain data, the rules that decide what counts, and the
# append-only SQLite store with its writer thread; beside the store, what else writes
# that database: the audit log, the dream's intent journal, undo's database half and
# the proposals queue.

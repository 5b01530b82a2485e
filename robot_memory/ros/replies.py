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
Service replies the middleware dropped: noticed, logged and counted for diagnostics.

rmw_fastrtps sends a reply only once the calling client's reply reader is matched, and
gives up after the reply writer's ``max_blocking_time`` (config/fastdds_profiles.xml sets
2 s for service replies; Fast DDS's default is 100 ms, too short for a client that has
just joined). rclpy then neither raises nor returns anything: it issues a
``RuntimeWarning: failed to send response (timeout)``. This module routes that warning,
for the services it watches, to a counter and the node's log instead of stderr.

The warning machinery is process-wide, so the hook is installed once; which service was
sending is kept per executor thread.
"""

import os
import pathlib
import sys
import threading
import time
from typing import Callable
import warnings

from robot_memory.dependencies import listed_versions

# rclpy's text (rclpy/src/rclpy/service.cpp), e.g. "failed to send response (timeout): ..."
DROPPED_REPLY = 'failed to send response'

_sending = threading.local()
_install_lock = threading.Lock()
# The warnings.showwarning _route replaced, which shows every other warning.
_shown: Callable = warnings.showwarning


def _route(message, category, filename, lineno, file=None, line=None):
    """warnings.showwarning: a dropped reply of a watched send is counted, not printed."""
    watch = getattr(_sending, 'watch', None)
    if (watch is not None and issubclass(category, RuntimeWarning)
            and str(message).startswith(DROPPED_REPLY)):
        watch.dropped(_sending.service, str(message), time.monotonic() - _sending.started)
        return
    _shown(message, category, filename, lineno, file, line)


def _install() -> None:
    """Route rclpy's dropped-reply warning to the watching service (process-wide)."""
    global _shown
    with _install_lock:
        # 'always': the default action shows a warning once per call site, which would
        # hide every drop after the first.
        warnings.filterwarnings('always', message=DROPPED_REPLY, category=RuntimeWarning)
        if warnings.showwarning is not _route:  # first use, or a catch_warnings undid it
            _shown = warnings.showwarning
            warnings.showwarning = _route


class ReplyWatch:
    """Counts replies of watched services, sent and dropped; ``on_drop(service, why, waited_s)``."""

    def __init__(self, on_drop=None):
        _install()
        self._lock = threading.Lock()
        self._on_drop = on_drop
        self.sent = 0
        self.dropped_by_service = {}

    def counts(self) -> tuple:
        """Return (replies attempted, {service: replies dropped}) since start."""
        with self._lock:
            return self.sent, dict(self.dropped_by_service)

    def watch(self, service, name: str):
        """Wrap ``service.send_response`` so a reply it drops is counted under ``name``."""
        send = service.send_response

        def send_response(response, header):
            _sending.watch, _sending.service, _sending.started = self, name, time.monotonic()
            try:
                send(response, header)
            finally:
                _sending.watch = _sending.service = None
            with self._lock:
                self.sent += 1

        service.send_response = send_response
        return service

    def dropped(self, name: str, why: str, waited_s: float = 0.0) -> None:
        """Record one dropped reply of service ``name`` (after waiting ``waited_s``)."""
        with self._lock:
            self.dropped_by_service[name] = self.dropped_by_service.get(name, 0) + 1
        if self._on_drop is not None:
            self._on_drop(name, why, waited_s)


# Fast DDS 3 (Kilted on) reads the first; Fast DDS 2 (Humble, Jazzy) only the second, which
# Kilted's rmw_fastrtps still reads but warns about.
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
_FAST_DDS_2_DISTROS = ('humble', 'iron', 'jazzy')


def reply_profile_path() -> pathlib.Path:
    """config/fastdds_profiles.xml of this install (share/robot_memory/config)."""
    # <prefix>/lib/pythonX.Y/site-packages/robot_memory/ros/replies.py -> <prefix>/share
    prefix = pathlib.Path(__file__).resolve().parents[5]
    return prefix / 'share' / 'robot_memory' / 'config' / 'fastdds_profiles.xml'


def _fast_dds_2(environ) -> bool:
    distro = environ.get('ROS_DISTRO', '')
    if distro:
        return distro in _FAST_DDS_2_DISTROS
    # ROS from PyPI wheels sets no ROS_DISTRO; Jazzy's wheels are named for it. Read from the
    # .dist-info names on sys.path: importlib.metadata would stay resident (2.7 MB).
    return 'ros-jazzy-rclpy' in listed_versions(sys.path)


def use_reply_profile(environ=None):
    """
    Point Fast DDS at the package's profile unless the user chose one; the file used.

    Must run before the process creates its first node (rclpy.init is fine). Returns the
    path in effect, or None when neither the user's nor the package's file exists.
    """
    environ = os.environ if environ is None else environ
    for name in PROFILE_VARIABLES:
        if environ.get(name):
            return pathlib.Path(environ[name])
    path = reply_profile_path()
    if not path.is_file():
        return None
    environ[PROFILE_VARIABLES[1 if _fast_dds_2(environ) else 0]] = str(path)
    return path

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
What guards every answer of the operator's page: names, token, CSRF mark and headers.

Which host names a page on 127.0.0.1 answers to, the access token's cookie and the mark every
change form carries; the middleware that adds the security headers (and Server-Timing) to
every answer. The handlers that use them are ``robot_memory.web.app``.
"""

import hashlib
import hmac
import ipaddress
import re
import secrets
import time

# A Host header is one name or [IPv6 address] and an optional port, nothing else.
HOST_HEADER = re.compile(r'(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9.-]+))'
                         r'(?::[0-9]{1,5})?')


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine."""
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """Return the lower-case name a Host header gives, '' when it is not a name and a port."""
    match = HOST_HEADER.fullmatch(header or '')
    return (match['v6'] or match['name']).lower() if match else ''


def csrf_mark(token: str) -> str:
    """Return the mark every change form carries: derived from the token, useless without it."""
    return hmac.new(token.encode(), b'robot_memory csrf', hashlib.sha256).hexdigest()


def token_cookie(token: str) -> str:
    """
    Return the name of the cookie that holds ``token``: one name per server.

    A browser sends a cookie of 127.0.0.1 to every port, so two pages open side by side
    (two tunnels to two robots) would otherwise overwrite each other's token.
    """
    return 'robot_memory_token_' + hashlib.sha256(token.encode()).hexdigest()[:12]


def new_token() -> str:
    """Return a fresh access token."""
    return secrets.token_urlsafe(24)


class ServerTiming:
    """ASGI middleware: a ``Server-Timing: app;dur=MS`` header on every answer (bench_web)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        """Time the request until its headers go out."""
        if scope['type'] != 'http':
            return await self.app(scope, receive, send)
        started = time.perf_counter()

        async def timed_send(message):
            if message['type'] == 'http.response.start':
                spent = (time.perf_counter() - started) * 1000
                message.setdefault('headers', [])
                message['headers'] = list(message['headers']) + [
                    (b'server-timing', f'app;dur={spent:.2f}'.encode())]
            await send(message)
        return await self.app(scope, receive, timed_send)


# Only the page's own script, style and requests; no frame, plugin, base or foreign form
# target: a text that slipped past escaping still could not run or send anything away.
SECURITY_HEADERS = [
    (b'content-security-policy', b"default-src 'none'; script-src 'self'; style-src 'self'; "
                                 b"img-src 'self'; connect-src 'self'; form-action 'self'; "
                                 b"frame-ancestors 'none'; base-uri 'none'"),
    (b'x-content-type-options', b'nosniff'),
    (b'x-frame-options', b'DENY'),
    (b'referrer-policy', b'same-origin'),
    (b'cross-origin-opener-policy', b'same-origin'),
    (b'cross-origin-resource-policy', b'same-origin'),
]


class SecurityHeaders:
    """ASGI middleware: the security headers on every answer; pages are not kept in caches."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        """Add the headers as the answer starts."""
        if scope['type'] != 'http':
            return await self.app(scope, receive, send)
        extra = list(SECURITY_HEADERS)
        if not scope['path'].startswith('/static/'):
            extra.append((b'cache-control', b'no-store'))

        async def guarded_send(message):
            if message['type'] == 'http.response.start':
                known = {name.lower() for name, _ in message.get('headers', [])}
                message['headers'] = list(message.get('headers', [])) + [
                    (name, value) for name, value in extra if name not in known]
            await send(message)
        return await self.app(scope, receive, guarded_send)

"""The worker's own HTTP connections: JSON in, JSON (or nothing) out, errors typed as
the client's. A wire made ``abortable`` can cut its requests in flight from another
thread (``abort()``): the worker's claim long poll ends at once when it stops, instead
of when the poll runs out."""

from __future__ import annotations

import socket
import threading
from typing import Any

import httpcore
import httpx

from . import errors


class _Tracked(httpcore.NetworkStream):
    """A network stream whose socket the backend can shut down (TLS included)."""

    def __init__(self, inner: httpcore.NetworkStream, backend: "_Backend") -> None:
        self._inner = inner
        self._backend = backend
        backend._track(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._backend._untrack(self)
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None):
        self._backend._untrack(self)
        return _Tracked(self._inner.start_tls(ssl_context, server_hostname, timeout), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def shutdown(self) -> None:
        sock = self._inner.get_extra_info("socket")
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Backend(httpcore.NetworkBackend):
    """httpcore's own backend, remembering its open streams."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()
        self._lock = threading.Lock()
        self._open: set[_Tracked] = set()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _Tracked(stream, self)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _Tracked(self._inner.connect_unix_socket(path, timeout, socket_options), self)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)

    def _track(self, stream: _Tracked) -> None:
        with self._lock:
            self._open.add(stream)

    def _untrack(self, stream: _Tracked) -> None:
        with self._lock:
            self._open.discard(stream)

    def shutdown_all(self) -> None:
        with self._lock:
            streams = list(self._open)
        for stream in streams:
            stream.shutdown()


class Wire:
    """One pool of connections to the API (``connections`` at most) with the token."""

    def __init__(self, url: str, token: str, *, timeout: float, connections: int = 1,
                 abortable: bool = False) -> None:
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        transport = httpx.HTTPTransport(limits=limits)
        self._backend: _Backend | None = None
        pool = getattr(transport, "_pool", None)
        if abortable and isinstance(pool, httpcore.ConnectionPool):
            # httpx takes no network backend of its own: its pool is rebuilt with one
            # that can shut its sockets down. Without that, abort() does nothing and a
            # stop waits for the long poll to end.
            self._backend = _Backend()
            transport._pool = httpcore.ConnectionPool(
                ssl_context=getattr(pool, "_ssl_context", None),
                max_connections=connections,
                max_keepalive_connections=connections,
                network_backend=self._backend,
            )
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout),
            transport=transport,
        )

    def call(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """POSTs ``body``; the answer, or the typed error."""
        response = self._http.post(path, json=body)
        if response.status_code >= 400:
            raise errors.from_response(response.status_code, response.content, response.headers)
        return response

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """POSTs ``body``; the JSON answer (None for 204), or the typed error."""
        response = self.call(path, body)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    @property
    def abortable(self) -> bool:
        return self._backend is not None

    def abort(self) -> None:
        """Cuts every request in flight (they raise a transport error)."""
        if self._backend is not None:
            self._backend.shutdown_all()

    def close(self) -> None:
        self._http.close()

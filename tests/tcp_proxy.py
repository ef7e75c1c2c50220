"""A TCP proxy on loopback that a test can cut: a network partition for one process.

A daemon replica that talks to the API server through it can be cut off
while its process lives on — the partition that killing a process does not
model: the replica keeps its state and its threads, cannot renew its
Lease, and comes back later believing whatever it believed.  The proxy
forwards bytes (TLS passes through untouched).  `cut()` closes every open
connection and the listening socket, so new connections are refused
(ECONNREFUSED, as from a host that is down); `restore()` listens on the
same port again.
"""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.cuts = 0
        self._listen()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _listen(self) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.port = int(s.getsockname()[1])
        with self._lock:
            self._listener = s
        threading.Thread(target=self._accept, args=(s,), name="tcp-proxy-accept", daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:             # closed by cut() or close()
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:             # the API server itself is down: so is this connection
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:      # cut while connecting
                    client.close()
                    server.close()
                    return
                self._conns |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), name="tcp-proxy-pump", daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                self._drop(s)

    def _drop(self, s: socket.socket) -> None:
        with self._lock:
            self._conns.discard(s)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def cut(self) -> None:
        """Partition: refuse new connections and reset the open ones."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = set(self._conns), set()
        if listener is not None:
            listener.close()
        for s in conns:
            self._drop(s)
        self.cuts += 1

    def restore(self) -> None:
        """Heal the partition: listen on the same port again."""
        with self._lock:
            if self._listener is not None:
                return
        self._listen()

    def close(self) -> None:
        self.cut()

"""A TCP relay in front of a real service, so one client's view of it can go down, stall and come
back while everyone else keeps using the service."""
from __future__ import annotations

import socket
import threading

from tests.support import unused_port


class Relay:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = unused_port()
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._flowing = threading.Event()  # cleared while held: bytes wait, both ways
        self._flowing.set()

    def up(self) -> Relay:
        listener = socket.create_server(("127.0.0.1", self.port))
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def hold(self) -> None:
        """Pass nothing on until `release`: the service looks stalled (a slow sink at its slowest),
        for as long as the test needs, however loaded the machine."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    def down(self) -> None:
        """Refuse new connections and cut the open ones, as a stopped server would."""
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in another thread
            except OSError:
                pass
            listener.close()
        with self._lock:
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()
        self._flowing.set()  # the pipes held lose their sockets and end

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

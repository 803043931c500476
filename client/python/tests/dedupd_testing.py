"""Test helpers: the real dedupd binary on 127.0.0.1 port 0, a TCP proxy
that drops a reply, and TLS certificates made with the openssl CLI.

Every wait is bounded; every process is stopped by its PID."""
import os
import select
import socket
import subprocess
import threading
import time

SERVING = "dedupd: serving on "


def binary():
    path = os.environ.get("DEDUPD_BINARY")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("set DEDUPD_BINARY to the dedupd binary (ctest does)")
    return path


class Server:
    """One dedupd process. start() waits (up to `timeout` s) for its
    "serving on" line and parses the port from it."""

    def __init__(self, data_dir, flags=(), listen="127.0.0.1:0"):
        self.data_dir = data_dir
        self.flags = list(flags)
        self.listen = listen
        self.proc = None
        self.port = 0
        self._lines = []
        self._served = threading.Event()

    def start(self, timeout=60):
        self._served.clear()
        self.proc = subprocess.Popen(
            [binary(), "--listen=" + self.listen, "--data_dir=" + self.data_dir] + self.flags,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        if not self._served.wait(timeout) or self.proc.poll() is not None:
            logs = self.logs()
            self.kill()
            raise RuntimeError("dedupd did not start: " + logs)
        return self

    def _read(self, proc):
        for line in proc.stdout:
            self._lines.append(line)
            if line.startswith(SERVING) and not self._served.is_set():
                self.port = int(line[len(SERVING):].split()[0].rsplit(":", 1)[1])
                self._served.set()

    def logs(self):
        return "".join(self._lines)

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def stop(self, timeout=30):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    def kill(self):
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.proc = None


class DroppingProxy:
    """A TCP proxy on 127.0.0.1 (an ephemeral port) in front of
    127.0.0.1:`target_port`. After drop_next_reply() it closes the connection
    at the first HTTP/2 HEADERS frame the server sends on a stream (RFC 9113
    section 4.1: 9-byte frame headers), i.e. as the next call's reply starts:
    the server did the work, the client sees UNAVAILABLE."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.address = "127.0.0.1:%d" % self.port
        self.cuts = 0
        self.connections = 0
        self.last_cut = None
        self._armed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def drop_next_reply(self):
        with self._lock:
            self._armed = True

    def close(self):
        self._stop.set()
        for t in list(self._threads):
            t.join(5)
        self.sock.close()

    def _accept(self):
        while not self._stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.05)
            if not r:
                continue
            client, _ = self.sock.accept()
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            self.connections += 1
            t = threading.Thread(target=self._pipe, args=(client, server), daemon=True)
            self._threads.append(t)
            t.start()

    def _pipe(self, client, server):
        pending = b""
        try:
            while not self._stop.is_set():
                r, _, _ = select.select([client, server], [], [], 0.05)
                if client in r:
                    data = client.recv(65536)
                    if not data:
                        return
                    server.sendall(data)
                if server in r:
                    data = server.recv(65536)
                    if not data:
                        return
                    pending += data
                    while len(pending) >= 9:
                        size = 9 + int.from_bytes(pending[0:3], "big")
                        if len(pending) < size:
                            break
                        ftype = pending[3]
                        stream = int.from_bytes(pending[5:9], "big") & 0x7FFFFFFF
                        if ftype == 0x1 and stream != 0:
                            with self._lock:
                                armed, self._armed = self._armed, False
                            if armed:
                                self.cuts += 1
                                self.last_cut = time.time()
                                return
                        client.sendall(pending[:size])
                        pending = pending[size:]
        except OSError:
            return
        finally:
            for s in (client, server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1/localhost, two client
    certificates (one from another CA). Returns a dict of paths."""
    def run(*args):
        subprocess.run(["openssl"] + list(args), check=True, cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)

    def key(name):
        run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", name + ".key")

    def ca(name):
        key(name)
        run("req", "-x509", "-new", "-key", name + ".key", "-days", "2", "-subj",
            "/CN=" + name, "-out", name + ".pem")

    def leaf(name, issuer, ext):
        key(name)
        run("req", "-new", "-key", name + ".key", "-subj", "/CN=" + name, "-out", name + ".csr")
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        run("x509", "-req", "-in", name + ".csr", "-CA", issuer + ".pem", "-CAkey",
            issuer + ".key", "-CAcreateserial", "-days", "1", "-extfile", name + ".ext",
            "-out", name + ".pem")

    ca("ca")
    ca("other-ca")
    leaf("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
         "extendedKeyUsage=serverAuth\n")
    leaf("client", "ca", "extendedKeyUsage=clientAuth\n")
    leaf("stranger", "other-ca", "extendedKeyUsage=clientAuth\n")
    return {n: os.path.join(d, n) for n in ("ca", "other-ca", "server", "client", "stranger")}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

#!/usr/bin/env python3
"""Whether a Docker-compatible engine (Docker, Podman) answers GET /_ping on a unix socket.

Shared by scripts/ensure-docker.sh and the Docker tests (python3 is on every machine, curl is not).
usage: engine_ping.py SOCKET [TIMEOUT_S]   exit 0 when the engine answers 200, 1 otherwise
"""
import socket
import sys


def answers(sock_path, timeout=2.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
        s.sendall(b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.startswith(b"HTTP/1.1 200")
    except OSError:
        return False
    finally:
        s.close()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(0 if answers(sys.argv[1], float(sys.argv[2]) if len(sys.argv) == 3 else 2.0) else 1)

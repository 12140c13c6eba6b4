# Helpers for the in-box programs' tests: their files in src/inbox, loaded by path, and the session
# driver run as the box runs it (`python3 -c RICH+DRIVER`), spoken to over its wire
# (src/scheduler/driver/python_driver.h).
import importlib.util
import os
import re
import secrets
import select
import subprocess
import sys

import pytest

INBOX = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'src', 'inbox')


def text(name):
    # What the build embeds: the file minus its leading comment lines (cmake/embed_sources.cmake).
    with open(os.path.join(INBOX, name), encoding='utf-8') as f:
        lines = f.read().splitlines(keepends=True)
    comment = '//' if name.endswith('.js') else '#'
    while lines and lines[0].startswith(comment):
        lines.pop(0)
    return ''.join(lines)


def load(name):
    # A file of definitions only (rich_output.py) as a module.
    spec = importlib.util.spec_from_file_location('inbox_' + name.replace('.', '_'), os.path.join(INBOX, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Wire:
    # A session driver's run (argv, its program among them) and the wire every driver shares
    # (src/scheduler/driver/driver_wire.h): the marker line first, then messages, each answered with
    # "\x1e<marker>:<status>\n" on stdout and "\x1e<marker>\n" on stderr.
    def __init__(self, argv, cwd):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.marker = secrets.token_hex(8)
        self._send(self.marker.encode() + b'\n')

    def _send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _read_until(self, stream, pattern):
        buf = b''
        while True:
            m = re.search(pattern, buf, re.S)
            if m:
                return buf[:m.start()], m
            ready, _, _ = select.select([stream], [], [], 20)
            assert ready, 'the driver did not answer within 20 s; got %r' % buf
            chunk = os.read(stream.fileno(), 65536)
            assert chunk, 'the driver exited; got %r' % buf
            buf += chunk

    def message(self, data):
        # Sends one message; its answer: (status, stdout, stderr).
        self._send(data)
        m = re.escape(b'\x1e' + self.marker.encode())
        out, status = self._read_until(self.proc.stdout, m + rb':(\d+)\n$')
        err, _ = self._read_until(self.proc.stderr, m + rb'\n$')
        return int(status.group(1)), out, err

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


class Driver(Wire):
    # The python session driver as the box runs it.
    def __init__(self, cwd):
        source = text('rich_output.py') + text('python_driver.py')
        super().__init__([sys.executable, '-c', source], cwd)

    def op(self, op, first, second=b''):
        # "<op> <len first> <len second or a number>\n" first second; the reply: (status, stdout, stderr).
        if isinstance(first, str):
            first = first.encode()
        if isinstance(second, int):
            head, tail = b'%s %d %d\n' % (op, len(first), second), b''
        else:
            second = second.encode() if isinstance(second, str) else second
            head, tail = b'%s %d %d\n' % (op, len(first), len(second)), second
        return self.message(head + first + tail)


@pytest.fixture
def driver(tmp_path):
    d = Driver(str(tmp_path))
    yield d
    d.close()


@pytest.fixture
def root(tmp_path):
    # A real path with no link in it (the fork state's files are written there).
    return os.path.realpath(str(tmp_path))

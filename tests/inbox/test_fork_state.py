# fork_export.py / fork_import.py: a session's globals saved in one interpreter, loaded in another.
import json
import subprocess
import sys

from conftest import text


def run(code):
    p = subprocess.run([sys.executable, '-c', code], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().split('\n')  # not splitlines: \x1e ends a line there
    line = [l for l in lines if l.startswith('\x1elsb-fork ')][-1]
    return p.stdout.decode(), json.loads(line[len('\x1elsb-fork '):])


def test_values_and_modules_survive_and_unpicklables_are_named(root):
    path = root + '/state'
    lit = json.dumps(path)  # as session_fork.cc's WithPath puts it in
    parent = 'import math as m\nx = [1, 2]\nf = lambda: 1\n' + text('fork_export.py').replace('%PATH%', lit)
    _, report = run(parent)
    assert report == {'values': ['x'], 'modules': ['m'], 'skipped': ['f']}
    child = text('fork_import.py').replace('%PATH%', lit) + 'print(x, m.sqrt(4), "_lsb_fork_import" in globals())\n'
    out, report = run(child)
    assert report == {'failed': []}
    assert '[1, 2] 2.0 False' in out

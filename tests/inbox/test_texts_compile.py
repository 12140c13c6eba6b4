# Every embedded Python text compiles as the box's interpreter gets it (placeholders filled in).
import ast
import os

import pytest

from conftest import INBOX, text

FILLS = {'fork_export.py': ('%PATH%', '"/tmp/x"'), 'fork_import.py': ('%PATH%', '"/tmp/x"')}


@pytest.mark.parametrize('name', sorted(n for n in os.listdir(INBOX) if n.endswith('.py')))
def test_compiles(name):
    src = text(name)
    if name in FILLS:
        src = src.replace(*FILLS[name])
    ast.parse(src, name)


def test_every_file_has_a_header():
    for name in os.listdir(INBOX):
        if name.endswith(('.py', '.sh', '.js')):
            first = open(os.path.join(INBOX, name)).readline()
            assert first.startswith('// ' if name.endswith('.js') else '# '), name

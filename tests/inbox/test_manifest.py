# manifest.py's walker (_lsb_manifest, the driver's op "M"), called directly on a temp dir.
import hashlib
import os

import pytest

from conftest import load, records


@pytest.fixture(scope='module')
def manifest():
    return load('manifest.py')._lsb_manifest


def walk(manifest, root, limits='100 1000 1000 .lsb-'):
    return {p[len(root):]: (k, d) for k, p, d in records(bytes(manifest(root.encode(), limits.encode())))}


def test_entries_carry_mode_size_hash_and_bytes(manifest, root):
    os.makedirs(root + '/d')
    open(root + '/d/f', 'wb').write(b'hello')
    os.chmod(root + '/d/f', 0o640)
    os.symlink('d/f', root + '/ln')
    got = walk(manifest, root)
    sha = hashlib.sha256(b'hello').hexdigest()
    assert got['/d/f'] == ('f', ('640 5 %s\n' % sha).encode() + b'hello')
    assert got['/ln'] == ('l', ('777 3 %s\n' % hashlib.sha256(b'd/f').hexdigest()).encode() + b'd/f')
    assert got['/d'][0] == 'd' and got['/d'][1].endswith(b' 0 -\n')


def test_files_past_the_budgets_are_hashed_only(manifest, root):
    open(root + '/big', 'wb').write(b'x' * 20)
    open(root + '/small', 'wb').write(b'y')
    got = walk(manifest, root, '100 10 1000 .lsb-')
    assert got['/big'] == ('h', ('644 20 %s\n' % hashlib.sha256(b'x' * 20).hexdigest()).encode())
    assert got['/small'][0] == 'f'


def test_the_stage_prefix_is_skipped_at_the_top_only(manifest, root):
    os.makedirs(root + '/.lsb-stage')
    os.makedirs(root + '/sub/.lsb-keep')
    got = walk(manifest, root)
    assert '/.lsb-stage' not in got
    assert '/sub/.lsb-keep' in got


def test_too_many_entries_raise(manifest, root):
    for i in range(5):
        open(root + '/f%d' % i, 'w').close()
    with pytest.raises(OverflowError, match='more than 3 files'):
        manifest(root.encode(), b'3 1000 1000 .lsb-')


def test_a_root_through_a_link_is_not_walked(manifest, root):
    os.makedirs(root + '/real')
    open(root + '/real/f', 'w').close()
    os.symlink(root + '/real', root + '/link')
    assert bytes(manifest((root + '/link').encode(), b'100 1000 1000 .lsb-')) == b''

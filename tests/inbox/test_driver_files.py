# The session driver's file ops (W, R, A, G, T) against a temp dir, over its real wire.
import os
import stat

from conftest import record, records


def test_write_then_read_round_trips_bytes(driver, root):
    data = bytes(range(256)) * 3
    status, _, err = driver.op(b'W', root + '/sub/dir/f.bin', data)
    assert (status, err) == (0, b'')
    assert open(root + '/sub/dir/f.bin', 'rb').read() == data
    status, out, _ = driver.op(b'R', root + '/sub/dir/f.bin', 1 << 20)
    assert (status, out) == (0, data)


def test_read_missing_file_is_status_2(driver, root):
    status, out, err = driver.op(b'R', root + '/nope', 100)
    assert status == 2 and out == b''
    assert b'nope' in err


def test_read_past_the_limit_is_status_3(driver, root):
    open(root + '/big', 'wb').write(b'x' * 100)
    status, out, err = driver.op(b'R', root + '/big', 99)
    assert status == 3 and out == b''
    assert b'the file is 100 bytes; the limit is 99' in err


def test_write_through_a_symlinked_directory_is_refused(driver, root):
    os.mkdir(root + '/real')
    os.symlink(root + '/real', root + '/link')
    status, _, err = driver.op(b'W', root + '/link/f', b'data')
    assert status == 4
    assert b'symbolic link' in err
    assert os.listdir(root + '/real') == []


def test_write_with_dotdot_is_refused(driver, root):
    os.mkdir(root + '/a')
    status, _, err = driver.op(b'W', root + '/a/../escaped', b'data')
    assert status == 4 and b'symbolic link' in err
    assert not os.path.exists(root + '/escaped')


def test_read_of_a_symlink_is_refused(driver, root):
    open(root + '/target', 'w').write('secret')
    os.symlink(root + '/target', root + '/ln')
    status, out, _ = driver.op(b'R', root + '/ln', 100)
    assert status == 4 and out == b''


def test_archive_unpacks_directories_and_modes(driver, root):
    blob = (record('d', root + '/t') + record('f', root + '/t/a.txt', b'hello') +
            record('x', root + '/t/run.sh', b'#!/bin/sh\n'))
    status, _, err = driver.op(b'A', blob, 0)
    assert (status, err) == (0, b'')
    assert open(root + '/t/a.txt', 'rb').read() == b'hello'
    assert stat.S_IMODE(os.stat(root + '/t/a.txt').st_mode) == 0o644
    assert stat.S_IMODE(os.stat(root + '/t/run.sh').st_mode) == 0o755


def test_tree_lists_dirs_files_and_skips_links(driver, root):
    os.makedirs(root + '/w/d')
    open(root + '/w/d/f', 'wb').write(b'abc')
    open(root + '/w/x', 'wb').write(b'#!')
    os.chmod(root + '/w/x', 0o755)
    os.symlink('/etc/passwd', root + '/w/ln')
    status, out, _ = driver.op(b'T', root + '/w', '100 1000')
    assert status == 0
    got = {(k, p[len(root):], d) for k, p, d in records(out)}
    assert got == {('d', '/w/d', b''), ('f', '/w/d/f', b'abc'), ('x', '/w/x', b'#!'), ('s', '/w/ln', b'')}


def test_tree_of_a_file_is_status_6_and_bounded_by_bytes(driver, root):
    open(root + '/file', 'wb').write(b'z' * 50)
    status, _, err = driver.op(b'T', root + '/file', '100 1000')
    assert status == 6 and b'not a directory' in err
    os.mkdir(root + '/d')
    open(root + '/d/big', 'wb').write(b'z' * 50)
    status, _, err = driver.op(b'T', root + '/d', '100 10')
    assert status == 3 and b'more than 10 bytes' in err


def test_collect_returns_matches_and_names_what_matched_nothing(driver, root):
    open(root + '/a.csv', 'wb').write(b'1,2')
    open(root + '/b.csv', 'wb').write(b'3,4')
    status, out, _ = driver.op(b'G', root + '/*.csv\n' + root + '/*.png', '10 1000 1000')
    assert status == 0
    got = [(k, p[len(root):], d) for k, p, d in records(out)]
    assert got == [('f', '/a.csv', b'1,2'), ('f', '/b.csv', b'3,4'), ('n', '/*.png', b'no file matches')]


def test_collect_stops_past_max_files(driver, root):
    for i in range(3):
        open(root + '/f%d' % i, 'wb').write(b'x')
    status, out, _ = driver.op(b'G', root + '/f*', '2 1000 1000')
    assert status == 0
    kinds = [k for k, _, _ in records(out)]
    assert kinds == ['f', 'f', 'e']
    assert b'more than 2 files matched' in records(out)[-1][2]

# The session driver's X (execute), O (rich outputs) and N (namespaces) ops.
import json



def test_variables_persist_and_the_last_expression_is_displayed(driver):
    status, out, _ = driver.op(b'X', 'x = 41\nprint("hi")', b'')
    assert (status, out) == (0, b'hi\n')
    status, out, _ = driver.op(b'X', 'x + 1', b'')
    assert (status, out) == (0, b'')
    status, out, _ = driver.op(b'O', b'', 0)
    entries = []
    while out:
        n, rest = out.split(b'\n', 1)
        entries.append(json.loads(rest[:int(n)]))
        out = rest[int(n):]
    assert entries == [{'text/plain': '42'}]


def test_exception_prints_session_traceback_and_exit_codes(driver):
    status, _, err = driver.op(b'X', '1/0', b'')
    assert status == 1
    assert b'ZeroDivisionError' in err and b'<session>' in err
    assert b'_lsb_main' not in err  # the driver's own frames are cut
    status, _, _ = driver.op(b'X', 'raise SystemExit(7)', b'')
    assert status == 7


def test_stdin_is_given_to_the_cell(driver):
    status, out, _ = driver.op(b'X', 'import sys\nprint(sys.stdin.read().upper())', b'abc')
    assert (status, out) == (0, b'ABC\n')


def test_namespaces_keep_separate_globals(driver):
    driver.op(b'X', 'v = "default"', b'')
    assert driver.op(b'N', 'other', 0)[0] == 0
    status, _, err = driver.op(b'X', 'v', b'')
    assert status == 1 and b'NameError' in err
    driver.op(b'N', '', 0)
    assert driver.op(b'X', 'print(v)', b'')[1] == b'default\n'


def test_unknown_op_is_status_4(driver):
    status, _, err = driver.op(b'Q', b'', 0)
    assert status == 4 and b'unknown or out-of-order operation Q' in err

# The bash/sh and node session drivers (src/inbox/shell_driver.sh, node_driver.js) run on the host
# as the box runs them, spoken to over their wire (src/scheduler/driver/repl_driver.h): state kept
# between executes, each execute's own output and status, stdin, and what ends the run.
import shutil

import pytest

from conftest import Wire, text

SHELLS = [s for s in ('bash', 'dash') if shutil.which(s)]


def shell_message(code, stdin=b''):
    # repl_messages.cc ShellMessage: "<bytes> <lines> <stdin bytes> <stdin lines>\n" code+"\n" stdin+"\n"
    body = code + b'\n'
    data = stdin + b'\n' if stdin else b''
    counts = lambda b: b'%d %d' % (len(b), b.count(b'\n')) if b else b'0 0'
    return counts(body) + b' ' + counts(data) + b'\n' + body + data


class Shell(Wire):
    def __init__(self, shell, cwd):
        super().__init__([shutil.which(shell), '-c', text('shell_driver.sh')], cwd)

    def run(self, code, stdin=b''):
        return self.message(shell_message(code.encode() if isinstance(code, str) else code, stdin))


@pytest.fixture(params=SHELLS)
def shell(request, tmp_path):
    s = Shell(request.param, str(tmp_path))
    yield s
    s.close()


def test_shell_keeps_cwd_variables_functions_and_exports(shell, tmp_path):
    (tmp_path / 'x').mkdir()
    assert shell.run('cd x; export A=1; B=2; f() { echo hi; }') == (0, b'', b'')
    status, out, _ = shell.run('pwd; echo $A $B; f; sh -c "echo child:$A"')
    assert status == 0
    assert out.decode().splitlines() == [str(tmp_path / 'x'), '1 2', 'hi', 'child:1']


def test_shell_status_and_stderr_are_the_executes(shell):
    assert shell.run('echo e >&2; false') == (1, b'', b'e\n')
    status, _, err = shell.run('if')  # a syntax error fails the eval, not the shell
    assert status == 2 and b'rror' in err
    assert shell.run('echo still') == (0, b'still\n', b'')


def test_shell_code_is_taken_byte_exact(shell):
    code = "printf '%s|' \"a  b\" 'c\\d' \"$(printf 'x\\ty')\"; echo; printf '\\303\\251\\n'"
    status, out, _ = shell.run(code)
    assert (status, out) == (0, b'a  b|c\\d|x\ty|\n\xc3\xa9\n')
    status, out, _ = shell.run('echo "\xc3\xa9t\xc3\xa9"; cat <<E\n  indented \\ line\nE\n'.encode('latin1'))
    assert (status, out) == (0, b'\xc3\xa9t\xc3\xa9\n  indented \\ line\n')


def test_shell_stdin_is_the_requests_never_the_wire(shell):
    assert shell.run('cat', b'l1\nl2\n') == (0, b'l1\nl2\n', b'')
    assert shell.run('cat', b'no newline') == (0, b'no newline\n', b'')  # the documented limit
    assert shell.run('cat; echo end') == (0, b'end\n', b'')  # /dev/null
    assert shell.run('echo after') == (0, b'after\n', b'')


def test_shell_break_and_continue_still_answer(shell):
    assert shell.run('echo a; break') == (0, b'a\n', b'')
    assert shell.run('echo b; continue') == (0, b'b\n', b'')
    assert shell.run('echo c') == (0, b'c\n', b'')


def test_shell_exit_ends_the_run_with_its_code(shell):
    shell._send(shell_message(b'exit 7'))
    assert shell.proc.wait(10) == 7


def test_shell_large_code(shell):
    code = ''.join('v%d=%d\n' % (i, i) for i in range(20000)) + 'echo $v19999'
    assert shell.run(code) == (0, b'19999\n', b'')


def node_message(code, stdin=b''):
    return b'X %d %d\n' % (len(code), len(stdin)) + code + stdin


@pytest.fixture
def node(tmp_path):
    if not shutil.which('node'):
        pytest.skip('no node on this host')
    n = Wire([shutil.which('node'), '-e', text('node_driver.js')], str(tmp_path))
    n.run = lambda code, stdin=b'': n.message(node_message(code.encode(), stdin))
    yield n
    n.close()


def test_node_keeps_globals_and_top_level_declarations(node):
    declare = 'globalThis.g = 1; var v = 2; let l = 3; const c = 4; function f() { return "hi"; }'
    assert node.run(declare) == (0, b'', b'')
    assert node.run('console.log(g, v, l, c, f(), [1] instanceof Array)') == (0, b'1 2 3 4 hi true\n', b'')
    status, _, err = node.run('let l = 5')
    assert status == 1 and b"SyntaxError: Identifier 'l' has already been declared" in err


def test_node_awaits_and_reports_errors_without_its_own_frames(node):
    assert node.run('await new Promise(r => setTimeout(r, 10)); console.log("a")') == (0, b'a\n', b'')
    assert node.run('Promise.resolve(3).then(x => console.log(x))') == (0, b'3\n', b'')
    status, _, err = node.run('throw new Error("boom")')
    assert status == 1 and b'Error: boom' in err and b'node:vm' not in err and b'[eval]' not in err
    status, _, err = node.run('Promise.reject(new TypeError("async boom"))')
    assert status == 1 and b'TypeError: async boom' in err
    assert node.run('console.error("still here")') == (0, b'', b'still here\n')


def test_node_stdin_is_the_requests(node):
    code = ('let s = ""; process.stdin.on("data", d => s += d);'
            'await new Promise(r => process.stdin.on("end", r)); console.log(s.toUpperCase())')
    assert node.run(code, b'abc') == (0, b'ABC\n', b'')
    code = 'let t = ""; for await (const d of process.stdin) t += d; console.log(JSON.stringify(t))'
    assert node.run(code) == (0, b'""\n', b'')


def test_node_process_exit_ends_the_run(node):
    node._send(node_message(b'process.exit(4)'))
    assert node.proc.wait(10) == 4

# e2b_env.py: the cell that sets (and reports, for a restore) environment variables in the
# sandbox's interpreter, run here under the host's python with ARGS put in as the host does.
import base64
import json
import subprocess
import sys

from conftest import text


def cell(env, report):
    args = base64.b64encode(json.dumps({'env': env, 'report': report}).encode()).decode()
    return text('e2b_env.py').replace('ARGS', args, 1)


def test_swap_reports_the_old_values_and_a_restore_puts_them_back():
    code = ("import os\nos.environ['KEEP'] = 'old'\nos.environ.pop('NEW', None)\n" +
            cell({'KEEP': 'new', 'NEW': 'x'}, True) +
            "\nprint()\nprint(os.environ['KEEP'], os.environ['NEW'])\n" +
            cell({'KEEP': 'old', 'NEW': None}, False) +
            "\nprint(os.environ['KEEP'], 'NEW' in os.environ, '_lsb_env' in globals())\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    before, now, after = out.splitlines()
    assert json.loads(before) == {'KEEP': 'old', 'NEW': None}
    assert now == 'new x'
    assert after == 'old False False'

#!/usr/bin/env bash
# The in-box programs' pytest suite (CTest inbox_python_unit). The first python3 that has pytest
# runs it: a python3 earlier on PATH (pyenv, a venv) may lack Debian's python3-pytest.
set -euo pipefail
# No bytecode next to src/inbox or the tests: the source tree stays as checked out.
export PYTHONDONTWRITEBYTECODE=1
here=$(cd "$(dirname "$0")" && pwd)
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import pytest' 2>/dev/null; then
    exec "$py" -m pytest -q -p no:cacheprovider "$here"
  fi
done
echo "inbox tests: no python3 with pytest (scripts/install-deps.sh installs python3-pytest)" >&2
exit 1

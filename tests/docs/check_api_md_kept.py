"""One-off check for the restructuring of docs/api.md (issue 37): every sentence of an older
docs/api.md is still in the current one, word for word (whitespace aside; a leading "Label: " may
have become a heading). Not a CTest: it compares with a git revision.

    python3 tests/docs/check_api_md_kept.py 54a2a38   # the last commit before the restructuring

Lines of that revision restated as tables (checked by hand, field by field) are listed in RESTATED."""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# 54a2a38's lines (or line.sentence): 7 error codes, 11 the execute body, 12 ExecResult, 19 the sessions
# intro, 20 the session create body and Session, 33.1 the batch body and answer, 39.1-2 an image entry,
# 42-43 the monitoring intro and /metrics, 50 /v1/overview, 51 Execution.
RESTATED = {"7", "11", "12", "19", "20", "33.1", "39.1", "39.2", "42", "43", "50", "51"}


def sentences(line):
    s = line.strip()
    if s.startswith("- "):
        s = s[2:]
    return re.split(r'(?<=\.) (?=[A-Z`"(])', s)


def main(rev):
    old = subprocess.run(["git", "-C", ROOT, "show", rev + ":docs/api.md"], check=True, capture_output=True,
                         text=True).stdout.split("\n")
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        new = re.sub(r"\s+", " ", f.read())
    missing = 0
    for n, line in enumerate(old, 1):
        restated = RESTATED if rev.startswith("54a2a38") else set()
        if not line.strip() or str(n) in restated:
            continue
        for i, s in enumerate(sentences(line), 1):
            if f"{n}.{i}" in restated:
                continue
            s = re.sub(r"\s+", " ", s).strip()
            label, sep, rest = s.partition(": ")
            alt = rest[0].upper() + rest[1:] if sep and rest and "(" not in label else None
            if s in new or (alt and alt in new):
                continue
            missing += 1
            print(f"missing {n}.{i}: {s[:150]}")
    print(f"{missing} sentences missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "54a2a38"))

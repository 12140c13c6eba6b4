"""The case model of the adversarial suite and how one case runs on one backend.

A case is a hostile program (python, run under the seed policy) plus a check of the SAFE OUTCOME
(what the program observed, the run's status) and the ALERT that must come with it. Programs
print "RESULT <value>" lines that the checks read. A case may declare itself not applicable on a
backend, always with the reason (e.g. a control that gVisor does not have and the policy waived).
"""
import textwrap
import traceback

from backends import GVISOR, WATCH

# Helpers every case program starts with.
PRELUDE = textwrap.dedent('''
    import ctypes, errno, os, socket, subprocess, sys
    libc = ctypes.CDLL(None, use_errno=True)
    def res(v): print("RESULT", v, flush=True)
    def errname(e): return errno.errorcode.get(e, str(e))
    def c_result(r): return "OK" if r >= 0 else errname(ctypes.get_errno())
    def sys_call(nr, *args):
        return c_result(libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args]))
    def attempt(fn):
        try:
            fn(); return "OK"
        except OSError as e:
            return errname(e.errno) if e.errno else type(e).__name__
''')

# Alerts that init's seccomp watch raises; the others (oom, pids, timeout, output) come from the
# outer box or init's own timer and are due on every backend.
WATCH_RULES = {"denied_exec", "network_attempt", "escape_syscall"}

HELD, HELD_ALERTED, NA, FAILED = "held", "held+alerted", "n/a", "FAILED"
# A failure this backend is known to have, documented in docs/security.md: shown, not hidden as
# n/a, and not failing the run (a case that starts holding there shows as held).
GAP = "GAP"


class Ctx:
    """What a check sees: the result JSON, the RESULT lines, the backend."""

    def __init__(self, result, backend):
        self.r = result
        self.b = backend
        self.out = [line.split(" ", 1)[1] if " " in line else "" for line in result.get("stdout", "").splitlines()
                    if line.startswith("RESULT")]

    def at(self, i):
        assert len(self.out) > i, f"the program printed {len(self.out)} RESULT lines, wanted #{i}: {self.r.get('stdout', '')[-500:]!r} stderr {self.r.get('stderr', '')[-500:]!r}"
        return self.out[i]

    def is_in(self, i, allowed):
        got = self.at(i)
        assert got in allowed, f"RESULT #{i} is {got!r}, safe outcomes: {allowed}"

    def eq(self, i, want):
        got = self.at(i)
        assert got == want, f"RESULT #{i} is {got!r}, want {want!r}"

    def all_in(self, allowed, count=None):
        if count is not None:
            assert len(self.out) == count, f"{len(self.out)} RESULT lines, want {count}: {self.out}"
        for i, got in enumerate(self.out):
            assert got in allowed, f"RESULT #{i} is {got!r}, safe outcomes: {allowed}"

    def status(self, *allowed):
        assert self.r.get("status") in allowed, f"status {self.r.get('status')!r}, want one of {allowed}"

    def not_in_output(self, marker):
        text = self.r.get("stdout", "") + self.r.get("stderr", "")
        assert marker not in text, f"{marker!r} appeared in the output"


class Case:
    def __init__(self, cid, title, code, check, alert=None, timeout_s=None, na=None, host=None,
                 section="", gap=None):
        self.id = cid
        self.title = title
        self.code = code
        self.check = check
        self.alert = alert            # (rule, field, substring) or (rule,) or None
        self.timeout_s = timeout_s
        self.na = na or (lambda b: None)
        self.host = host              # host-side driver: host(backend) -> (result, proc), replaces code
        self.section = section
        self.gap = gap or (lambda b: None)  # gap(backend) -> the known gap's reason, or None

    def program(self):
        return PRELUDE + textwrap.dedent(self.code)

    def alert_applies(self, backend):
        """None when the alert is due on this backend, else why not."""
        if not self.alert:
            return None
        if self.alert[0] in WATCH_RULES and not backend.has(WATCH):
            return "no seccomp user notification here: the watch that raises this alert is off"
        if self.alert[0] == "pids_limit" and backend.has(GVISOR):
            return ("under gVisor the pids limit is the Sentry's RLIMIT_NPROC (fork fails with EAGAIN inside "
                    "the Sentry); the host's pids.events only counts the Sentry's own threads")
        return None


class Outcome:
    def __init__(self, verdict, detail="", seconds=0.0):
        self.verdict = verdict
        self.detail = detail
        self.seconds = seconds

    def cell(self):
        detail = " ".join(self.detail.split())  # one line: it goes into a table cell
        if self.verdict in (HELD, HELD_ALERTED):
            return self.verdict + (f" ({detail})" if detail else "")
        return f"{self.verdict}: {detail}"


def check_alert(result, alert):
    rule = alert[0]
    found = [a for a in result.get("alerts", []) if a.get("rule") == rule]
    assert found, f"no alert {rule!r}; alerts: {[a.get('rule') for a in result.get('alerts', [])]}"
    if len(alert) == 3:
        _, field, want = alert
        assert any(want in str(a.get(field, "")) for a in found), \
            f"no {rule!r} alert with {field} containing {want!r}: {found}"


def run_case(case, backend):
    import time
    reason = case.na(backend)
    if reason:
        return Outcome(NA, reason)
    start = time.monotonic()
    try:
        if case.host:
            result, proc = case.host(backend)
        else:
            result, proc = backend.run(case.program(), timeout_s=case.timeout_s)
        if result is None:
            if case.gap(backend):
                return Outcome(GAP, f"{case.gap(backend)} (observed: no result, {proc.stderr.strip()[-160:]})",
                               time.monotonic() - start)
            return Outcome(FAILED, f"no JSON result (exit {proc.returncode}): {proc.stderr.strip()[-400:]}",
                           time.monotonic() - start)
        case.check(Ctx(result, backend))
        detail = ""
        if case.alert:
            why_not = case.alert_applies(backend)
            if why_not is None:
                check_alert(result, case.alert)
                return Outcome(HELD_ALERTED, "", time.monotonic() - start)
            detail = "alert n/a: " + why_not
        return Outcome(HELD, detail, time.monotonic() - start)
    except AssertionError as e:
        gap = case.gap(backend)
        if gap:
            return Outcome(GAP, f"{gap} (observed: {str(e)[:200]})", time.monotonic() - start)
        return Outcome(FAILED, str(e).replace("\n", " ")[:600], time.monotonic() - start)
    except Exception:  # a broken driver is a failure too, with its trace
        return Outcome(FAILED, traceback.format_exc().replace("\n", " | ")[-600:], time.monotonic() - start)

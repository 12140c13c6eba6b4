"""What a box shares with the host, issue 15: the kernel's per-user limits (class 4), the network
namespace with its loopback up, and the host's /etc and /proc identity. Imported at the end of
cases.py (its `add`, `_assert` and helpers are defined by then).
"""
import os
import socket
import subprocess
import textwrap
import time

from backends import GVISOR, USERNS
from cases import _assert, add


# ---------------------------------------------------------------- per-user kernel limits (issue 15, class 4)
# The kernel charges inotify instances/watches, queued signals, mqueue bytes... to the uid that owns
# the box's user namespace, up to the host's. Each case: box A uses a limit up and holds it; then the
# HOST (root, the daemon's uid) and a SECOND box must still get theirs. Box A must stop at its own
# share (docs/security.md, "Class 4").

RUNC_SHARED_UID = ("runc: no user namespace, so the box's uid (the policy's 1000) is charged in the host's own "
                   "namespace, shared by every box and any host user with that uid; box A stops at the host's "
                   "per-user limit and box B gets nothing (root is not affected; docs/security.md, Class 4)")


def _runc_shares_uid(b):
    if hasattr(b, "shared_counts"):
        return b.shared_counts()  # the fork server without CAP_SYS_RESOURCE (docs/security.md)
    return RUNC_SHARED_UID if not b.has(USERNS) else None


def _src(*parts):
    """Program text from pieces written at different indents."""
    return "".join(textwrap.dedent(p) + "\n" for p in parts)


def _probe(code):
    """Runs `code` as a host process (root) and returns its RESULT lines."""
    from suite import PRELUDE
    p = subprocess.run(["/usr/bin/python3", "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=60)
    return [line.split(" ", 1)[1] for line in p.stdout.splitlines() if line.startswith("RESULT ")] or \
        ["probe failed: " + p.stderr[-300:]]


def _holding(attack, probe, host_probe):
    """Host driver: box A runs `attack` and holds what it took; while it holds, the host runs
    `host_probe` and box B runs `probe`. Box A reports when it started and stopped holding, so a slow
    start fails the case instead of passing it vacuously."""
    def driver(backend):
        from suite import PRELUDE
        a = backend.popen(PRELUDE + "import time\n" + textwrap.dedent(attack) +
                          "\nres('holding %f' % time.time())\ntime.sleep(16)\nres('released %f' % time.time())\n")
        time.sleep(6)
        try:
            t0 = time.time()
            host = _probe(host_probe)
            result, proc = backend.run(PRELUDE + textwrap.dedent(probe))
            t1 = time.time()
        finally:
            a.wait(timeout=120)
            a_out = a.stdout.read()
        if result is not None:
            result.update(_box_a=a_out, _host=host, _window=(t0, t1))
        return result, proc
    return driver


def _box_a(c):
    """Box A's RESULT lines, after checking that it held its share through the probes."""
    import json
    try:
        r = json.loads(c.r["_box_a"])
    except ValueError:
        raise AssertionError("box A gave no result: " + c.r["_box_a"][-300:])
    lines = [line.split(" ", 1)[1] for line in r.get("stdout", "").splitlines() if line.startswith("RESULT ")]
    held = [float(x.split()[1]) for x in lines if x.startswith("holding ")]
    released = [float(x.split()[1]) for x in lines if x.startswith("released ")]
    _assert(held and released, f"box A did not hold to the end: {lines} {r.get('stderr', '')[-300:]}")
    t0, t1 = c.r["_window"]
    _assert(held[0] < t0 and released[0] > t1, f"box A held from {held[0]} to {released[0]}, probes ran {t0}-{t1}")
    return lines


def _int(s):
    return int(s.split()[0])


add("limits.inotify_instances", "inotify instances used up in box A: the host and box B still get theirs", None,
    lambda c: (lambda a: (_assert(_int(a[0]) <= 16 and a[1] == "EMFILE", f"box A made {a[0]} instances ({a[1]}), "
                                                                         "its share is 16"),
                          _assert(_int(c.r["_host"][0]) >= 8, f"the host (root) made {c.r['_host']} of 8"),
                          c.eq(0, "8")))(_box_a(c)),
    host=_holding('''
        fds = []
        def more():
            while len(fds) < 100000:
                fd = libc.inotify_init1(0o2000000)
                if fd < 0: raise OSError(ctypes.get_errno(), "inotify_init1")
                fds.append(fd)
        err = attempt(more)
        res(len(fds)); res(err)
    ''', '''
        n = 0
        for _ in range(8):
            if libc.inotify_init1(0o2000000) >= 0: n += 1
        res(n)
    ''', '''
        n = 0
        for _ in range(8):
            if libc.inotify_init1(0o2000000) >= 0: n += 1
        res(n)
    '''), gap=_runc_shares_uid, timeout_s=40)

_WATCH = '''
    def watch(limit):
        fd = libc.inotify_init1(0o2000000)
        if fd < 0: return 0, errname(ctypes.get_errno())
        wds = set()   # one watch per inode: a path reached twice (links) gives the same wd
        def paths():
            for top in ("/usr/lib", "/usr/share", "/usr/local/lib"):
                for d, dirs, files in os.walk(top):
                    for f in dirs + files:
                        yield os.path.join(d, f)
            # A small image root has fewer inodes than the share: files of its own, on the tmpfs.
            import tempfile
            mine = tempfile.mkdtemp(prefix="w")
            dfd = os.open(mine, os.O_RDONLY | os.O_DIRECTORY)
            for i in range(min(limit, 20000)):
                os.close(os.open(str(i), os.O_WRONLY | os.O_CREAT, dir_fd=dfd))  # 4x cheaper than open()
                yield os.path.join(mine, str(i))
        for p in paths():
            if len(wds) >= limit: return len(wds), "limit"
            wd = libc.inotify_add_watch(fd, p.encode(), 0x2)
            if wd >= 0: wds.add(wd)
            elif ctypes.get_errno() == errno.ENOSPC: return len(wds), "ENOSPC"
        return len(wds), "walked"
'''

add("limits.inotify_watches", "inotify watches used up in box A: the host and box B still get theirs", None,
    lambda c: (lambda a: (_assert(_int(a[0]) <= 8192 and a[1] == "ENOSPC", f"box A added {a[0]} watches ({a[1]}), "
                                                                           "its share is 8192"),
                          _assert(c.r["_host"][0] == "2000", f"the host (root) added {c.r['_host']} of 2000"),
                          c.eq(0, "2000")))(_box_a(c)),
    host=_holding(_src(_WATCH, '''
        n, why = watch(10 ** 6)
        res(n); res(why)
    '''), _src(_WATCH, 'res(watch(2000)[0])'), _src(_WATCH, 'res(watch(2000)[0])')),
    gap=_runc_shares_uid, timeout_s=40)

_SIGQUEUE = '''
    import signal
    sig = signal.SIGRTMIN + 3
    signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
    libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    def queue(limit):
        n = 0
        while n < limit:
            if libc.sigqueue(os.getpid(), sig, None) != 0: return n, errname(ctypes.get_errno())
            n += 1
        return n, "limit"
'''

add("limits.sigpending", "queued signals used up in box A (kill overrides the rlimit): host and box B still queue",
    None,
    lambda c: (lambda a: (_assert(a[0] == "100000", f"box A queued {a[0]} signals by kill"),
                          _assert(_int(a[1]) <= 1024 and a[2] == "EAGAIN", f"box A sigqueue'd {a[1]} ({a[2]}), its "
                                                                           "share is 1024"),
                          _assert(c.r["_host"][0] == "200", f"the host (root) queued {c.r['_host']} of 200"),
                          c.eq(0, "200")))(_box_a(c)),
    host=_holding(_src(_SIGQUEUE, '''
        k = 0
        for _ in range(100000):   # kill() is SI_USER: the kernel queues it past RLIMIT_SIGPENDING
            os.kill(os.getpid(), sig); k += 1
        res(k)
        n, why = queue(10 ** 6)
        res(n); res(why)
    '''), _src(_SIGQUEUE, 'res(queue(200)[0])'), _src(_SIGQUEUE, 'res(queue(200)[0])')),
    gap=_runc_shares_uid, timeout_s=40)

_MQ = '''
    class MqAttr(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                    ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
    libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(MqAttr)]
    def queues(limit, tag):
        n = 0
        while n < limit:
            a = MqAttr(0, 10, 8192, 0)
            name = ("/lsb-%s-%d-%d" % (tag, os.getpid(), n)).encode()
            if libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a)) < 0:
                return n, errname(ctypes.get_errno())
            if tag == "host": libc.mq_unlink(name)
            n += 1
        return n, "limit"
'''

add("limits.mqueue", "POSIX message queue bytes used up in box A: the host and box B still open queues", None,
    # On native, Landlock refuses the open of every new queue (EACCES: the mqueue filesystem is under
    # no rule); where queues open, box A must stop at 3 (256 KiB) and box B still open 2.
    lambda c: (lambda a: (_assert((_int(a[0]) <= 3 and a[1] == "EMFILE") or (a[0] == "0" and a[1] == "EACCES"),
                                  f"box A opened {a[0]} queues of 80 KiB ({a[1]}), its share is 256 KiB"),
                          _assert(c.r["_host"][0] == "1 limit", f"the host (root) opened {c.r['_host']} of 1 queue"),
                          c.is_in(0, ("2 limit", "0 EACCES") if a[1] == "EACCES" else ("2 limit",))))(_box_a(c)),
    host=_holding(_src(_MQ, '''
        n, why = queues(1000, "a")
        res(n); res(why)
    '''), _src(_MQ, 'res("%d %s" % queues(2, "b"))'), _src(_MQ, 'res("%d %s" % queues(1, "host"))')),
    gap=_runc_shares_uid, timeout_s=40)

add("limits.own_share_fixed", "the box's own limits are in place and cannot be raised from inside", '''
    import resource
    for n in ("max_inotify_instances", "max_inotify_watches", "max_user_namespaces", "max_net_namespaces"):
        res(open("/proc/sys/user/" + n).read().strip())
    res(attempt(lambda: open("/proc/sys/user/max_inotify_instances", "w").write("100000")))
    res(resource.getrlimit(resource.RLIMIT_SIGPENDING))
    def raise_it():
        resource.setrlimit(resource.RLIMIT_SIGPENDING, (1 << 20, 1 << 20))
    try:
        raise_it(); res("OK")
    except ValueError:
        res("refused")
    except OSError as e:
        res(errname(e.errno))
    res(sys_call(272, 0x10000000))   # unshare(CLONE_NEWUSER)
''', lambda c: (c.eq(0, "16"), c.eq(1, "8192"), c.eq(2, "0"), c.eq(3, "0"), c.is_in(4, ("EROFS", "EACCES", "EPERM")),
                c.eq(5, "(1024, 1024)"), c.is_in(6, ("EPERM", "refused")), c.is_in(7, ("EPERM", "ENOSPC"))),
    na=lambda b: None if b.has(USERNS) else "no user namespace of the box's own (Docker/runc): see limits.* gaps")


# ---------------------------------------------------------------- network isolation with loopback up
# The native box's loopback is down by default; the egress proxy needs it up. Isolation must not
# rest on it being down: these run the native box with LLM_SANDBOX_NATIVE_LOOPBACK=up.
_LO_UP = {"LLM_SANDBOX_NATIVE_LOOPBACK": "up"}
LO_NA = "Docker's NetworkMode none already has lo up: the net.* cases run there with it up"


def _native_only(b):
    if not b.cli:
        return "drives `llm-sandbox run` itself (its environment, its process tree)"
    return None if b.has(USERNS) else LO_NA


class _HostListeners:
    """TCP on 127.0.0.1 and ::1, UDP on 127.0.0.1, an abstract unix socket: the host's loopback
    services a box must not reach. `heard()` says whether anything came in."""

    def __init__(self):
        self.tcp4 = socket.socket()
        self.tcp4.bind(("127.0.0.1", 0))
        self.tcp4.listen(8)
        self.tcp6 = socket.socket(socket.AF_INET6)
        self.tcp6.bind(("::1", 0))
        self.tcp6.listen(8)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_name = "\0lsb-adv-lo-%d" % os.getpid()
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_name)
        self.unix.listen(8)
        self.ports = (self.tcp4.getsockname()[1], self.tcp6.getsockname()[1], self.udp.getsockname()[1])
        for s in (self.tcp4, self.tcp6, self.udp, self.unix):
            s.setblocking(False)

    def heard(self):
        got = []
        for name, s in (("tcp4", self.tcp4), ("tcp6", self.tcp6), ("unix", self.unix)):
            try:
                s.accept()
                got.append(name)
            except BlockingIOError:
                pass
        try:
            self.udp.recvfrom(100)
            got.append("udp")
        except BlockingIOError:
            pass
        return got

    def close(self):
        for s in (self.tcp4, self.tcp6, self.udp, self.unix):
            s.close()


def _lo_up_from_inside(backend):
    from suite import PRELUDE
    h = _HostListeners()
    t4, t6, u = h.ports
    try:
        result, proc = backend.run(PRELUDE + f'''
import fcntl, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s.fileno(), 0x8913, struct.pack("16sH", b"lo", 0)))[1]
res(bool(flags & 1))                                             # 0: lo is up
own = socket.socket(); own.bind(("127.0.0.1", 0)); own.listen(1)
res(attempt(lambda: socket.socket().connect(own.getsockname())))  # 1: the box's own loopback
def c(fam, addr):
    x = socket.socket(fam); x.settimeout(2); return attempt(lambda: x.connect(addr))
res(c(socket.AF_INET, ("127.0.0.1", {t4})))                       # 2: host's tcp 127.0.0.1
res(c(socket.AF_INET6, ("::1", {t6})))                            # 3: host's tcp ::1
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
res(attempt(lambda: d.sendto(b"x", ("127.0.0.1", {u}))))          # 4: host's udp
x = socket.socket(socket.AF_UNIX); res(attempt(lambda: x.connect({h.unix_name!r})))  # 5: abstract
res(attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)))  # 6: raw
# 7: sendmmsg of two UDP datagrams to the host's port (libc directly, past any one-message path)
class Iov(ctypes.Structure): _fields_ = [("b", ctypes.c_char_p), ("n", ctypes.c_size_t)]
class Hdr(ctypes.Structure): _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint), ("iov", ctypes.POINTER(Iov)),
    ("iovlen", ctypes.c_size_t), ("ctl", ctypes.c_void_p), ("ctllen", ctypes.c_size_t), ("flags", ctypes.c_int)]
class MHdr(ctypes.Structure): _fields_ = [("hdr", Hdr), ("len", ctypes.c_uint)]
sa = ctypes.create_string_buffer(struct.pack("<H", socket.AF_INET) + struct.pack("!H", {u}) + bytes([127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]), 16)
iov = Iov(b"y", 1)
m = (MHdr * 2)(MHdr(Hdr(ctypes.addressof(sa), 16, ctypes.pointer(iov), 1, None, 0, 0), 0),
               MHdr(Hdr(ctypes.addressof(sa), 16, ctypes.pointer(iov), 1, None, 0, 0), 0))
libc.sendmmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
res(c_result(libc.sendmmsg(d.fileno(), ctypes.addressof(m), 2, 0)))
''', env=_LO_UP)
        time.sleep(0.3)
        if result is not None:
            result["_heard"] = h.heard()
        return result, proc
    finally:
        h.close()


add("net.lo_up_from_inside", "loopback up: the host's 127.0.0.1, ::1, UDP, abstract socket stay unreachable", None,
    lambda c: (c.eq(0, "True"), c.is_in(1, ("ENETUNREACH", "EACCES", "EPERM")),
               c.is_in(2, ("ENETUNREACH", "ECONNREFUSED", "EACCES", "EPERM")),
               c.is_in(3, ("ENETUNREACH", "ECONNREFUSED", "EACCES", "EPERM")),
               c.is_in(4, ("ENETUNREACH", "EACCES", "EPERM", "OK")),
               c.is_in(5, ("ECONNREFUSED", "EPERM", "EACCES")), c.is_in(6, ("EPERM", "EACCES")),
               _assert(c.r["_heard"] == [], f"the host's listeners heard from the box: {c.r['_heard']}")),
    alert=("network_attempt", "address", "127.0.0.1:"), host=_lo_up_from_inside, na=_native_only)


def _init_of(cli_pid):
    """The box's init: the child of the CLI that is in another network namespace."""
    mine = os.readlink("/proc/self/ns/net")
    for _ in range(100):
        try:
            kids = open(f"/proc/{cli_pid}/task/{cli_pid}/children").read().split()
        except OSError:
            kids = []
        for k in kids:
            try:
                if os.readlink(f"/proc/{k}/ns/net") != mine:
                    return int(k)
            except OSError:
                pass
        time.sleep(0.1)
    return None


def _lo_up_netns_as_root(backend):
    """Root itself, entered into the box's network namespace (nsenter), tries the host's listeners:
    the namespace alone keeps them apart, whatever the watch or Landlock do."""
    from suite import PRELUDE
    h = _HostListeners()
    t4, t6, u = h.ports
    a = backend.popen(PRELUDE + 'import time\nres("up")\ntime.sleep(8)\n', env=_LO_UP)
    try:
        init = _init_of(a.pid)
        _assert(init is not None, "found no init of the box")
        probe = subprocess.run(["nsenter", f"--net=/proc/{init}/ns/net", "/usr/bin/python3", "-c", PRELUDE + f'''
def c(fam, addr):
    x = socket.socket(fam); x.settimeout(2); return attempt(lambda: x.connect(addr))
res(c(socket.AF_INET, ("127.0.0.1", {t4})))
res(c(socket.AF_INET6, ("::1", {t6})))
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); res(attempt(lambda: d.sendto(b"x", ("127.0.0.1", {u}))))
x = socket.socket(socket.AF_UNIX); res(attempt(lambda: x.connect({h.unix_name!r})))
res(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))
'''], capture_output=True, text=True, timeout=30)
        time.sleep(0.3)
        heard = h.heard()
    finally:
        a.wait(timeout=120)
        out = a.stdout.read()
        h.close()
    import json
    try:
        result = json.loads(out)
    except ValueError:
        return None, subprocess.CompletedProcess(a.args, a.returncode, out, a.stderr.read())
    result["stdout"] = probe.stdout + probe.stderr[-300:]
    result["_heard"] = heard
    return result, None


add("net.lo_up_netns_as_root", "loopback up: root in the box's netns cannot reach the host's loopback services", None,
    lambda c: (c.eq(0, "ECONNREFUSED"), c.eq(1, "ECONNREFUSED"), c.eq(2, "OK"), c.eq(3, "ECONNREFUSED"),
               c.eq(4, "['lo']"),
               _assert(c.r["_heard"] == [], f"the host's listeners heard from the box's netns: {c.r['_heard']}")),
    host=_lo_up_netns_as_root, na=_native_only)


# ---------------------------------------------------------------- the host's /etc and /proc identity
def _host_file(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _not_the_hosts(c, i, path):
    """The box's view of `path` is absent, unreadable, empty or at least not the host's content."""
    got, host = c.at(i), _host_file(path)
    _assert(host is None or got != repr(host) or host == "", f"{path} in the box is the host's: {got[:80]}")


_IDENTITY = ["/etc/machine-id", "/etc/hostname", "/proc/cmdline", "/proc/sys/kernel/random/boot_id",
             "/etc/docker/daemon.json", "/etc/ssh/sshd_config", "/etc/llm-sandbox/tokens", "/etc/subuid",
             "/etc/gitconfig", "/etc/pip.conf", "/etc/npmrc", "/etc/shadow"]
add("fs.host_identity", "the host's machine-id, hostname, /proc/cmdline, boot_id, docker/ssh/token config", '''
    def _r(fn):
        try:
            res(repr(fn()))
        except OSError as e:
            res(errname(e.errno))
''' + "".join(f"    _r(lambda: open({p!r}).read())\n" for p in _IDENTITY) + '''
    res(sorted(os.listdir("/etc")) if os.path.isdir("/etc") else [])
''', lambda c: ([_not_the_hosts(c, i, p) for i, p in enumerate(_IDENTITY)],
                # gVisor's Sentry answers /proc/cmdline itself ("BOOT_IMAGE=/vmlinuz-4.4.0-gvisor
                # quiet"): not the host's, which _not_the_hosts above checks; elsewhere it is masked.
                _assert(c.at(2) == "''" or (c.b.has(GVISOR) and "gvisor" in c.at(2)),
                        f"/proc/cmdline is not masked: {c.at(2)[:80]}"),
                [_assert(p not in c.at(len(_IDENTITY)), f"/etc/{p} is in the box")
                 for p in ("docker", "ssh", "machine-id", "llm-sandbox", "subuid", "sudoers")
                 if c.b.has(USERNS)]))

add("fs.synthetic_etc_works", "with the box's own /etc, python's users, hosts, ssl, locale, time, mime work", '''
    import getpass, pwd, grp, ssl, mimetypes, locale, time
    res(getpass.getuser() == pwd.getpwuid(os.getuid()).pw_name)
    res(grp.getgrgid(os.getgid()).gr_name != "")
    res(socket.gethostbyname("localhost"))
    res(ssl.create_default_context().cert_store_stats()["x509_ca"] > 10)
    res(mimetypes.guess_type("a.json")[0])
    res(time.localtime().tm_year > 2000)
    res(subprocess.run([sys.executable, "-c", "print(7)"], capture_output=True, text=True).stdout.strip())
    res(socket.gethostname() == open("/etc/hostname").read().strip())
''', lambda c: (c.eq(0, "True"), c.eq(1, "True"), c.eq(2, "127.0.0.1"), c.eq(3, "True"),
                c.eq(4, "application/json"), c.eq(5, "True"), c.eq(6, "7"), c.eq(7, "True")),
    na=lambda b: None if b.has(USERNS) else "Docker: the box's /etc is the image's own (the test image has no user 1000)")

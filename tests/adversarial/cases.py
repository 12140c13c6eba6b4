"""The adversarial cases: every DESIGN §7 threat, plus techniques from public escapes and from the
threat models of gVisor, nsjail, bubblewrap and runc. Each asserts the safe outcome; `alert` names
the alert that must come with it. Sections: fs, cmd, net, kernel, proc, priv, res, iso.
"""
import os
import socket
import subprocess
import threading
import time

from backends import GVISOR, LANDLOCK, WATCH
from suite import Case, Ctx  # noqa: F401

CASES = []
ERRS = ("EPERM", "EACCES")
NO_LANDLOCK = "commands.allow/deny need Landlock, which gVisor lacks; waived by gvisor_accept_weaker"


def add(cid, title, code, check, **kw):
    kw.setdefault("section", cid.split(".")[0])
    CASES.append(Case(cid, title, code, check, **kw))


def needs_landlock(b):
    return None if b.has(LANDLOCK) else NO_LANDLOCK


def gvisor_gap(reason):
    """A known gap under gVisor's accepted weaker mode (docs/security.md lists them)."""
    return lambda b: ("gVisor: " + reason) if b.has(GVISOR) else None


# ---------------------------------------------------------------- filesystem

add("fs.shadow", "read /etc/shadow",
    'res(attempt(lambda: open("/etc/shadow").read()))',
    lambda c: c.is_in(0, ("EACCES", "ENOENT")))

add("fs.write_root", "write to / and /usr/bin",
    'res(attempt(lambda: open("/pwned", "w")))\nres(attempt(lambda: open("/usr/bin/pwned", "w")))',
    # EACCES: gVisor checks permissions before the read-only mount (its root is "ro" in mountinfo).
    lambda c: c.all_in(("EROFS",) if not c.b.has(GVISOR) else ("EROFS", "EACCES"), 2))

add("fs.fill_tmp", "fill /tmp (files below the size rlimit)", '''
    def fill():
        for i in range(8):
            with open("/tmp/fill%d" % i, "wb") as f:
                for _ in range(32):
                    f.write(b"x" * (1 << 20)); f.flush()
    res(attempt(fill))
    res(sum(os.path.getsize("/tmp/" + n) for n in os.listdir("/tmp")) <= 100 * (1 << 20))
''', lambda c: (c.eq(0, "ENOSPC"), c.eq(1, "True")))

add("fs.exec_tmp_copy", "run a copy of python3 from /tmp (noexec)", '''
    import shutil
    shutil.copy("/usr/bin/python3", "/tmp/py"); os.chmod("/tmp/py", 0o755)
    res(attempt(lambda: subprocess.run(["/tmp/py", "-c", "print('RAN')"])))
''', lambda c: (c.eq(0, "EACCES"), c.not_in_output("RAN")), alert=("denied_exec", "path", "/tmp/py"))

add("fs.huge_file", "a 10 GiB sparse file", '''
    def big():
        with open("/tmp/big", "wb") as f:
            f.seek(10 << 30); f.write(b"x")
    res(attempt(big))
''', lambda c: c.is_in(0, ("EFBIG", "ENOSPC")))

add("fs.fd_exhaustion", "open files until refused", '''
    fds = []
    def exhaust():
        while True: fds.append(os.open("/dev/null", os.O_RDONLY))
    res(attempt(exhaust)); res(len(fds) < 100000)
''', lambda c: (c.eq(0, "EMFILE"), c.eq(1, "True")))

add("fs.docker_sock", "the engine's socket is absent",
    'res(any(os.path.exists(p) for p in ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd",'
    ' "/run/podman/podman.sock"]))',
    lambda c: c.eq(0, "False"))

add("fs.fds_only_stdio", "/proc/self/fd: nothing inherited beyond 0-2", '''
    def is_open(fd):
        try:
            os.fstat(fd); return True
        except OSError:
            return False
    res([fd for fd in range(4096) if is_open(fd)])
    res(sorted(int(x) for x in os.listdir("/proc/self/fd")))
''', lambda c: (c.eq(0, "[0, 1, 2]"), c.is_in(1, ("[0, 1, 2]", "[0, 1, 2, 3]"))))

add("fs.hardlink_etc", "hard links to /etc files from the writable /tmp", '''
    res(attempt(lambda: os.link("/etc/passwd", "/tmp/passwd")))
    res(attempt(lambda: os.link("/etc/shadow", "/tmp/shadow")))
''', lambda c: c.all_in(("EXDEV", "EPERM", "EACCES", "ENOENT", "EROFS"), 2))

add("fs.symlink_to_secret", "a /tmp symlink to /etc/shadow and to init's root", '''
    os.symlink("/etc/shadow", "/tmp/s"); os.symlink("/proc/1/root/etc/shadow", "/tmp/r")
    res(attempt(lambda: open("/tmp/s").read()))
    res(attempt(lambda: open("/tmp/r").read()))
''', lambda c: c.all_in(("EACCES", "ENOENT", "EPERM"), 2))

add("fs.proc_self_exe", "overwrite /proc/self/exe and init's exe (CVE-2019-5736 style)", '''
    res(attempt(lambda: open("/proc/self/exe", "r+b")))
    res(attempt(lambda: open("/proc/1/exe", "r+b")))
    res(attempt(lambda: os.open("/proc/1/exe", os.O_PATH)))
''', lambda c: (c.is_in(0, ("ETXTBSY", "EROFS", "EACCES", "EPERM")),
                c.is_in(1, ("ETXTBSY", "EROFS", "EACCES", "EPERM")),
                c.is_in(2, ("EACCES", "EPERM"))))

add("fs.mknod", "mknod a block device and a char device", '''
    import stat
    res(attempt(lambda: os.mknod("/tmp/sda", stat.S_IFBLK | 0o600, os.makedev(8, 0))))
    res(attempt(lambda: os.mknod("/tmp/mem", stat.S_IFCHR | 0o600, os.makedev(1, 1))))
''', lambda c: c.all_in(ERRS + ("EROFS",), 2),
    gap=gvisor_gap("mknod succeeds on the policy's tmpfs (no nodev in the seed policy); the node is a gVisor device, not the host's"))

add("fs.dev_nodes", "no host devices in /dev (mem, kmsg, disks)", '''
    bad = []
    for p in ["/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/nvme0n1",
              "/dev/fuse", "/dev/net/tun", "/dev/kvm"]:
        if attempt(lambda: open(p, "rb").close()) == "OK":
            bad.append(p)
    res(bad)
''', lambda c: c.eq(0, "[]"),
    gap=gvisor_gap("/dev/fuse and /dev/net/tun open; they are the Sentry's emulated devices, not the host's"))

add("fs.sysfs", "write to /sys (uevent_helper, cgroup files)", '''
    out = []
    for p in ["/sys/kernel/uevent_helper", "/sys/fs/cgroup/cgroup.procs", "/sys/power/state"]:
        out.append(attempt(lambda: open(p, "w").write("x")))
    res(all(o != "OK" for o in out))
''', lambda c: c.eq(0, "True"))

add("fs.host_paths", "the host's home, root and work dirs are not visible", '''
    seen = []
    for p in ["/root", "/home", "/work", "/var/lib/docker", "/var/run/docker", "/srv"]:
        try:
            if os.listdir(p): seen.append(p)
        except OSError:
            pass
    res(seen)
''', lambda c: c.eq(0, "[]"))

add("fs.inotify_host", "inotify watches on the host's private paths", '''
    fd = libc.inotify_init1(0o4000)
    out = []
    for p in ["/root", "/home", "/work", "/var/lib/docker", "/var/log/journal", "/etc/llm-sandbox"]:
        if libc.inotify_add_watch(fd, p.encode(), 0x3ce) >= 0:
            try:
                if os.listdir(p): out.append(p)
            except OSError:
                pass
    res(out)
''', lambda c: c.eq(0, "[]"))

# ---------------------------------------------------------------- commands

add("cmd.bin_sh", "/bin/sh through subprocess",
    'res(attempt(lambda: subprocess.run(["/bin/sh", "-c", "echo PWN""ED"])))',
    lambda c: (c.eq(0, "EACCES"), c.not_in_output("PWNED")), alert=("denied_exec", "path", "/bin/sh"),
    na=needs_landlock)

add("cmd.os_system", "os.system()",
    'res(os.system("echo PWN""ED") != 0)',
    lambda c: (c.eq(0, "True"), c.not_in_output("PWNED")), alert=("denied_exec", "path", "/bin/sh"),
    na=needs_landlock)

add("cmd.bash", "/bin/bash",
    'res(attempt(lambda: subprocess.run(["/bin/bash", "-c", "echo PWN""ED"])))',
    lambda c: (c.is_in(0, ("EACCES", "ENOENT")), c.not_in_output("PWNED")),
    alert=("denied_exec",), na=needs_landlock)

add("cmd.ld_so", "ld-linux.so /bin/sh (the dynamic-loader trick)", '''
    import glob
    loaders = sorted(set(glob.glob("/lib64/ld-linux*.so*") + glob.glob("/lib/x86_64-linux-gnu/ld-linux*.so*")))
    res(bool(loaders))
    for ld in loaders:
        try:
            p = subprocess.run([ld, "/bin/sh", "-c", "echo PWN""ED"], capture_output=True)
            res("ran rc=%d" % p.returncode)
        except OSError as e:
            res(errname(e.errno))
''', lambda c: (c.eq(0, "True"), c.not_in_output("PWNED"),
                [c.is_in(i, ("EACCES",) + tuple("ran rc=%d" % n for n in range(1, 256)))
                 for i in range(1, len(c.out))]),
    na=needs_landlock)

add("cmd.memfd_exec", "memfd_create + fexecve", '''
    def memfd_exec():
        fd = os.memfd_create("x", 0)
        with open("/usr/bin/python3", "rb") as src: os.write(fd, src.read())
        os.execve(fd, ["x", "-c", "print('PWN''ED')"], {})
    res(attempt(memfd_exec))
''', lambda c: (c.not_in_output("PWNED"), c.is_in(0, ("EPERM", "EACCES", "ENOSYS"))))

add("cmd.execveat_empty", "execveat(fd, \"\", AT_EMPTY_PATH)", '''
    fd = os.open("/usr/bin/python3", os.O_RDONLY)
    argv = (ctypes.c_char_p * 3)(b"x", b"-V", None)
    envp = (ctypes.c_char_p * 1)(None)
    res(sys_call(322, fd, ctypes.addressof(ctypes.create_string_buffer(b"")),
                 ctypes.addressof(argv), ctypes.addressof(envp), 0x1000))
''', lambda c: c.eq(0, "EPERM"))

add("cmd.exec_path_race", "a thread rewrites the exec path while the call is held", '''
    import threading
    buf = ctypes.create_string_buffer(b"/usr/bin/python3", 64)
    stop = False
    def flip():
        while not stop:
            ctypes.memmove(buf, b"/bin/sh\\0", 8)
            ctypes.memmove(buf, b"/usr/bin/python3\\0", 17)
    child = os.fork()
    if child == 0:
        threading.Thread(target=flip, daemon=True).start()
        argv = (ctypes.c_char_p * 4)(b"x", b"-c", b"echo SHELL''WON", None)
        envp = (ctypes.c_char_p * 1)(None)
        for _ in range(2000):
            libc.execve(buf, argv, envp)
        os._exit(0)
    os.waitpid(child, 0)
    res("done")
''', lambda c: c.not_in_output("SHELLWON"), timeout_s=20, na=needs_landlock)

add("cmd.nested_interpreter", "an allowed python3 child that then execs /bin/sh", '''
    p = subprocess.run(["/usr/bin/python3", "-c",
                        "import os\\ntry:\\n os.execv('/bin/sh', ['sh', '-c', 'echo PWN''ED'])\\n"
                        "except OSError as e: print('inner', e.errno)"], capture_output=True, text=True)
    res(p.stdout.strip())
''', lambda c: (c.eq(0, "inner 13"), c.not_in_output("PWNED")), alert=("denied_exec", "path", "/bin/sh"),
    na=needs_landlock)

add("cmd.setuid_binary", "a setuid-root binary (su) gives no privilege", '''
    try:
        p = subprocess.run(["/usr/bin/su", "-c", "id -u"], capture_output=True, text=True, timeout=10,
                           stdin=subprocess.DEVNULL)
        res("rc=%d out=%s" % (p.returncode, p.stdout.strip() or "-"))
    except OSError as e:
        res(errname(e.errno))
    res(os.getuid() != 0 and os.geteuid() != 0)
''', lambda c: (_assert(c.at(0) == "EACCES" or (c.at(0).startswith("rc=") and not c.at(0).endswith("out=0")),
                        "su ran as root: " + c.at(0)), c.eq(1, "True")),
    alert=("denied_exec", "path", "/usr/bin/su"))

add("cmd.noexec_mmap", "mmap(PROT_EXEC) of a /tmp file, also with personality(READ_IMPLIES_EXEC)", '''
    import mmap
    with open("/tmp/code", "wb") as f: f.write(b"\\xc3" * 4096)
    fd = os.open("/tmp/code", os.O_RDONLY)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    r = libc.mmap(None, 4096, 1 | 4, 2, fd, 0)    # PROT_READ|PROT_EXEC, MAP_PRIVATE
    res("OK" if r not in (None, ctypes.c_void_p(-1).value) else errname(ctypes.get_errno()))
    libc.personality(0x0400000)                 # READ_IMPLIES_EXEC
    r = libc.mmap(None, 4096, 1, 2, fd, 0)
    maps = [l for l in open("/proc/self/maps") if l.rstrip().endswith("/tmp/code")]
    res(any(l.split()[1][2] == "x" for l in maps))
''', lambda c: (c.is_in(0, ("EPERM", "EACCES")), c.eq(1, "False")),
    gap=gvisor_gap('noexec is not enforced on mmap(PROT_EXEC) (exec itself is refused)'))

# ---- issue 15, class 3: the ELF interpreter run directly, by every spelling the exec watch saw
# differently from the kernel. Each probe runs the loader on a READABLE ELF that is not allowed
# (libc.so.6 prints its banner when run): Landlock grants EXECUTE on ld.so for the allowed commands
# and READ_FILE on /lib, so only the watch stands between these and a run. Each must fail with
# EACCES/EPERM and raise denied_exec.

_EXEC_PROBE = '''
import glob, threading
LD = "/lib64/ld-linux-x86-64.so.2"
if not os.path.exists(LD):
    LD = sorted(glob.glob("/lib64/ld-linux*.so*") + glob.glob("/lib/*/ld-linux*.so*"))[0]
LD_REAL = os.path.realpath(LD)
LD_DIR, LD_NAME = os.path.split(LD)
ELF = [p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                   "/lib64/libc.so.6", "/usr/lib64/libc.so.6") if os.path.exists(p)][0]
MARK = "GNU C Library"
libc.syscall.restype = ctypes.c_long
AT_EMPTY_PATH = 0x1000

def cstrs(items):
    return (ctypes.c_char_p * (len(items) + 1))(*[s.encode() if isinstance(s, str) else s for s in items], None)

def execveat(dirfd, path, argv, flags=0):
    a, e = cstrs(argv), cstrs([])
    p = ctypes.create_string_buffer(path.encode())
    libc.syscall(ctypes.c_long(322), ctypes.c_long(dirfd), p, a, e, ctypes.c_long(flags))
    raise OSError(ctypes.get_errno(), "execveat")

def probe(fn):
    """Runs fn (which execs) in a forked child: the errno name of a refused exec, else what ran."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r); os.dup2(w, 1); os.dup2(w, 2)
            fn()
            msg = "no-exec"
        except OSError as e:
            msg = errname(e.errno)
        except BaseException as e:
            msg = type(e).__name__
        os.write(w, ("EXECFAIL " + msg + "\\n").encode())
        os._exit(0)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        out += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    if text.startswith("EXECFAIL "):
        return text.split()[1]
    if MARK in text:
        return "LOADER-RAN-THE-ELF"
    return "ran status=%d %s" % (status, " ".join(text.split())[:80])

def run_elf(path):
    return lambda: os.execv(path, [path, ELF])
'''


def _ldso_case(cid, title, body, **kw):
    add(cid, title, _EXEC_PROBE + body,
        lambda c: (c.eq(0, "True"), _assert(len(c.out) > 1, "no probe ran"),
                   [c.is_in(i, ERRS) for i in range(1, len(c.out))], c.not_in_output("LOADER-RAN")),
        alert=kw.pop("alert", ("denied_exec",)), na=needs_landlock, **kw)


_ldso_case("cmd.ldso_readable_elf", "ld.so run directly on a readable, not allowed ELF (libc.so.6)", '''
res(os.access(ELF, os.R_OK))
for ld in sorted({LD, LD_REAL}):
    res(probe(run_elf(ld)))
''')

_ldso_case("cmd.ldso_proc_self_root", "ld.so through /proc/self/root and /proc/<pid>/root", '''
res(True)
res(probe(lambda: run_elf("/proc/self/root" + LD)()))
res(probe(lambda: run_elf("/proc/%d/root%s" % (os.getpid(), LD_REAL))()))
res(probe(lambda: run_elf("/proc/self/root/proc/self/root/proc/self/root" + LD)()))
res(probe(lambda: run_elf("/proc/self/task/%d/root%s" % (os.getpid(), LD))()))
''')

_ldso_case("cmd.ldso_thread_self", "ld.so through /proc/thread-self (root, cwd), also from a second thread", '''
res(True)
res(probe(lambda: run_elf("/proc/thread-self/root" + LD)()))
def from_cwd():
    os.chdir(LD_DIR)
    run_elf("/proc/thread-self/cwd/" + LD_NAME)()
res(probe(from_cwd))
def from_thread():
    box = []
    def go():
        try:
            run_elf("/proc/thread-self/root" + LD)()
        except OSError as e:
            box.append(e)
    t = threading.Thread(target=go); t.start(); t.join()
    raise box[0]
res(probe(from_thread))
''')

_ldso_case("cmd.ldso_relative", "ld.so by a cwd-relative name (chdir to its directory, ../ from elsewhere)", '''
res(True)
def rel(cwd, path):
    def go():
        os.chdir(cwd)
        os.execv(path, [path, ELF])
    return go
res(probe(rel(LD_DIR, LD_NAME)))
res(probe(rel(LD_DIR, "./" + LD_NAME)))
res(probe(rel(os.path.dirname(LD_REAL), os.path.basename(LD_REAL))))
res(probe(rel("/usr", ".." + LD)))
res(probe(rel("/tmp", "../.." + LD_REAL)))
''')

_ldso_case("cmd.ldso_execveat_dirfd", "execveat(dirfd, \"ld-linux...\"): an O_RDONLY, an O_PATH dirfd, and /", '''
res(True)
res(probe(lambda: execveat(os.open(LD_DIR, os.O_RDONLY | os.O_DIRECTORY), LD_NAME, [LD_NAME, ELF])))
res(probe(lambda: execveat(os.open(os.path.dirname(LD_REAL), os.O_PATH | os.O_DIRECTORY),
                           os.path.basename(LD_REAL), ["x", ELF])))
res(probe(lambda: execveat(os.open("/", os.O_PATH), LD[1:], ["x", ELF])))
res(probe(lambda: execveat(os.open("/tmp", os.O_PATH), "../" + LD[1:], ["x", ELF])))
''')

_ldso_case("cmd.ldso_execveat_empty", "execveat(fd, \"\", AT_EMPTY_PATH) on an O_PATH and an O_RDONLY fd of ld.so", '''
res(True)
res(probe(lambda: execveat(os.open(LD, os.O_PATH), "", ["x", ELF], AT_EMPTY_PATH)))
res(probe(lambda: execveat(os.open(LD_REAL, os.O_RDONLY), "", ["x", ELF], AT_EMPTY_PATH)))
res(probe(lambda: execveat(os.open("/lib64", os.O_PATH), "", ["x", ELF], AT_EMPTY_PATH)))
''')

_ldso_case("cmd.ldso_deleted_cwd", "ld.so by ../ from a deleted cwd", '''
res(True)
def deleted(levels):
    def go():
        d = "/tmp/gone%d" % os.getpid()
        os.makedirs(d + "/x")
        os.chdir(d + "/x")
        os.rmdir(d + "/x")
        if levels > 3:
            os.rmdir(d)
        path = "../" * levels + LD[1:]
        os.execv(path, [path, ELF])
    return go
res(probe(deleted(3)))
res(probe(deleted(4)))
''')

_ldso_case("cmd.ldso_proc_cwd_fd", "ld.so through /proc/<pid>/cwd, /proc/self/cwd and /proc/self/fd/<dirfd>", '''
res(True)
def via(fmt):
    def go():
        os.chdir(LD_DIR)
        fd = os.open(LD_DIR, os.O_PATH)
        path = fmt.format(pid=os.getpid(), fd=fd, name=LD_NAME)
        os.execv(path, [path, ELF])
    return go
res(probe(via("/proc/{pid}/cwd/{name}")))
res(probe(via("/proc/self/cwd/{name}")))
res(probe(via("/proc/self/fd/{fd}/{name}")))
res(probe(via("/proc/thread-self/fd/{fd}/{name}")))
res(probe(via("/proc/{pid}/fd/{fd}/../" + os.path.basename(LD_DIR) + "/{name}")))
''')

_ldso_case("cmd.ldso_tmp_symlink", "/tmp symlinks to ld.so: direct, through /proc/self/cwd, /proc/self/root, chained", '''
res(True)
def link(target, name):
    def go():
        os.chdir(LD_DIR)
        p = "/tmp/%s%d" % (name, os.getpid())
        os.symlink(target, p)
        os.execv(p, [p, ELF])
    return go
res(probe(link(LD, "direct")))
res(probe(link("/proc/self/cwd/" + LD_NAME, "cwd")))
res(probe(link("/proc/self/root" + LD, "root")))
def via_fd():
    fd = os.open(LD_DIR, os.O_PATH)
    link("/proc/self/fd/%d/%s" % (fd, LD_NAME), "fd")()
res(probe(via_fd))
def chained():
    os.chdir(LD_DIR)
    a, b = "/tmp/ca%d" % os.getpid(), "/tmp/cb%d" % os.getpid()
    os.symlink("/proc/thread-self/cwd/" + LD_NAME, a)
    os.symlink(a, b)
    os.execv(b, [b, ELF])
res(probe(chained))
''')

add("cmd.ldso_exec_race", "a thread flips the exec path between python3 and ld.so (measured)", _EXEC_PROBE + '''
TRIES = 120
ALLOWED = b"/usr/bin/python3\\0"
TARGET = LD.encode() + b"\\0"
buf = ctypes.create_string_buffer(max(len(ALLOWED), len(TARGET)) + 8)
def racer():
    def flip():
        while True:
            ctypes.memmove(buf, TARGET, len(TARGET))
            ctypes.memmove(buf, ALLOWED, len(ALLOWED))
    threading.Thread(target=flip, daemon=True).start()
    argv, envp = cstrs(["x", ELF]), cstrs([])
    for _ in range(200):
        libc.execve(buf, argv, envp)
    raise OSError(ctypes.get_errno(), "execve")
counts = {}
for _ in range(TRIES):
    o = probe(racer)
    key = ("won" if o == "LOADER-RAN-THE-ELF" else "killed" if "status=9 " in o + " " or "thread-local" in o
           else "python-ran" if o.startswith("ran status=256 ") else "refused" if o in ("EACCES", "EPERM") else "other")
    counts[key] = counts.get(key, 0) + 1
    if key == "other":
        res("other: " + o)
res(sorted(counts.items()))
res(counts.get("won", 0))
''', lambda c: (c.eq(len(c.out) - 1, "0"), c.not_in_output("LOADER-RAN")), alert=("denied_exec",),
    timeout_s=30, na=needs_landlock)

add("cmd.exec_allowed_forms", "allowed python3 still runs by every spelling the watch must now resolve", _EXEC_PROBE + '''
code = ["x", "-c", "print('ALLOWED' + '-OK')"]
def rel():
    os.chdir("/usr/bin"); os.execv("./python3", code)
def link():
    p = "/tmp/py%d" % os.getpid(); os.symlink("/proc/self/root/usr/bin/python3", p); os.execv(p, code)
def dirfd():
    execveat(os.open("/usr/bin", os.O_PATH), "python3", code)
for fn in (lambda: os.execv("/proc/self/exe", code), lambda: os.execv("/proc/thread-self/root/usr/bin/python3", code),
           rel, link, dirfd, lambda: os.execv("/usr/bin/../bin/python3", code)):
    res(probe(fn))
''', lambda c: c.all_in(("ran status=0 ALLOWED-OK",), 6), na=needs_landlock)

# ---------------------------------------------------------------- network

add("net.redis_loopback", "connect 127.0.0.1:6379 (the host's Redis)", '''
    s = socket.socket(); s.settimeout(3)
    res(attempt(lambda: s.connect(("127.0.0.1", 6379))))
''', lambda c: c.is_in(0, ("ENETUNREACH", "ECONNREFUSED", "EACCES", "EPERM", "timeout")),
    alert=("network_attempt", "address", "127.0.0.1:6379"))

add("net.cloud_metadata", "connect 169.254.169.254:80 (cloud metadata)", '''
    s = socket.socket(); s.settimeout(3)
    res(attempt(lambda: s.connect(("169.254.169.254", 80))))
''', lambda c: c.is_in(0, ("ENETUNREACH", "EHOSTUNREACH", "ECONNREFUSED", "EACCES", "EPERM", "timeout")),
    alert=("network_attempt", "address", "169.254.169.254:80"))

add("net.ipv6_loopback", "connect [::1]:80", '''
    s = socket.socket(socket.AF_INET6); s.settimeout(3)
    res(attempt(lambda: s.connect(("::1", 80))))
''', lambda c: c.is_in(0, ("ENETUNREACH", "ECONNREFUSED", "EACCES", "EPERM", "EADDRNOTAVAIL", "timeout")),
    alert=("network_attempt", "address", "[::1]:80"))

add("net.udp_sendto", "UDP sendto 8.8.8.8:53", '''
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    res(attempt(lambda: s.sendto(b"x", ("8.8.8.8", 53))))
''', lambda c: c.is_in(0, ("ENETUNREACH", "EHOSTUNREACH", "EACCES", "EPERM")),
    alert=("network_attempt", "address", "8.8.8.8:53"))

add("net.exotic_sockets", "AF_PACKET, AF_VSOCK, AF_ALG, raw, netlink sockets", '''
    for fam, typ in [(socket.AF_PACKET, socket.SOCK_RAW), (40, socket.SOCK_STREAM),
                     (38, socket.SOCK_SEQPACKET), (socket.AF_INET, socket.SOCK_RAW),
                     (socket.AF_NETLINK, socket.SOCK_RAW)]:
        res(attempt(lambda: socket.socket(fam, typ)))
''', lambda c: c.all_in(("EPERM", "EAFNOSUPPORT", "EACCES"), 5))

add("net.interfaces", "only the loopback interface exists",
    'res(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))',
    lambda c: c.is_in(0, ("['lo']", "[]")))


def _host_abstract_socket(backend):
    """A listener on a host abstract unix socket; the box must not reach it (other netns)."""
    # Unique per call: lanes run side by side in threads of this process, and two backends' runs
    # of this case at once would otherwise bind one name (EADDRINUSE, a failed cell).
    name = "\0lsb-adv-host-%d-%s" % (os.getpid(), os.urandom(4).hex())
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(name)
    srv.listen(1)
    srv.settimeout(0.2)
    try:
        code = ('s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
                f'res(attempt(lambda: s.connect({name!r})))\n')
        from suite import PRELUDE
        return backend.run(PRELUDE + code)
    finally:
        srv.close()


add("net.abstract_unix_host", "connect to an abstract unix socket of the host", None,
    lambda c: c.is_in(0, ("ECONNREFUSED", "EPERM", "EACCES", "ENOENT")), host=_host_abstract_socket)

# ---- issue 15: every destination of a multi-message send is checked and reported

_MMSG = '''
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class MsgHdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.c_void_p),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class MMsgHdr(ctypes.Structure):
    _fields_ = [("hdr", MsgHdr), ("len", ctypes.c_uint32)]
import struct
keep = []
def sin(ip, port):
    b = ctypes.create_string_buffer(struct.pack("!HH4s8x", 0, port, socket.inet_aton(ip)), 16)
    struct.pack_into("=H", b, 0, socket.AF_INET)
    keep.append(b)
    return ctypes.addressof(b), 16
payload = ctypes.create_string_buffer(b"x" * 8)
iov = Iov(ctypes.addressof(payload), 8)
def msgs(addrs):
    arr = (MMsgHdr * len(addrs))()
    for i, a in enumerate(addrs):
        name, nlen = sin(*a) if a else (None, 0)
        arr[i].hdr = MsgHdr(name, nlen, ctypes.addressof(iov), 1, None, 0, 0)
    return arr
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
'''

add("net.sendmsg_iovecs", "sendmsg with several iovecs and a destination", '''
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
res(attempt(lambda: s.sendmsg([b"a" * 100, b"b" * 100, b"c" * 100], [], 0, ("8.8.8.8", 53))))
''', lambda c: c.is_in(0, ("ENETUNREACH", "EHOSTUNREACH", "EACCES", "EPERM")),
    alert=("network_attempt", "address", "8.8.8.8:53"))


def _alerted_addresses(c):
    return {a.get("address") for a in _alerts(c, "network_attempt")}


def _all_reported(*want):
    def check(c):
        if not c.b.has(WATCH):
            return  # no watch, no alerts (the call itself must still fail)
        got = _alerted_addresses(c)
        _assert(set(want) <= got, "destinations not reported: %s (alerts: %s)" % (set(want) - got, got))
    return check


add("net.sendmmsg_each", "sendmmsg with three messages to three addresses: each one reported", _MMSG + '''
arr = msgs([("10.1.2.3", 53), ("8.8.4.4", 53), ("1.1.1.1", 53)])
res(sys_call(307, s.fileno(), ctypes.addressof(arr), 3, 0))
''', lambda c: (c.is_in(0, ("ENETUNREACH", "EHOSTUNREACH", "EACCES", "EPERM")),
                _all_reported("10.1.2.3:53", "8.8.4.4:53", "1.1.1.1:53")(c)),
    alert=("network_attempt", "address", "10.1.2.3:53"))

add("net.sendmmsg_far", "sendmmsg of 200 messages, the only inet destination at #150", _MMSG + '''
addrs = [None] * 200
addrs[150] = ("9.9.9.9", 53)
arr = msgs(addrs)
res(sys_call(307, s.fileno(), ctypes.addressof(arr), 200, 0))
''', lambda c: c.is_in(0, ("ENETUNREACH", "EHOSTUNREACH", "EDESTADDRREQ", "EACCES", "EPERM")),
    alert=("network_attempt", "address", "9.9.9.9:53"))

add("net.send_unreadable", "sendto / sendmsg / sendmmsg whose destination cannot be read: refused, reported", _MMSG + '''
res(sys_call(44, s.fileno(), ctypes.addressof(payload), 8, 0, 0x1000, 16))      # sendto, unmapped address
hdr = MsgHdr(0x1000, 16, ctypes.addressof(iov), 1, None, 0, 0)
res(sys_call(46, s.fileno(), ctypes.addressof(hdr), 0))                        # sendmsg, unmapped name
res(sys_call(46, s.fileno(), 0x1000, 0))                                       # sendmsg, unmapped header
arr = msgs([("10.9.8.7", 53)])
res(sys_call(307, s.fileno(), ctypes.addressof(arr), 1000, 0))                 # sendmmsg past its array
''', lambda c: c.all_in(("ENETUNREACH", "EHOSTUNREACH", "EFAULT", "EACCES", "EPERM"), 4),
    alert=("network_attempt", "address", "unreadable"))

# ---------------------------------------------------------------- kernel surface

add("kernel.unshare_userns", "unshare(CLONE_NEWUSER) and clone(CLONE_NEWUSER): user namespace nesting", '''
    res(sys_call(272, 0x10000000))
    res(sys_call(56, 0x10000000 | 17, 0, 0, 0, 0))
''', lambda c: c.all_in(("EPERM",), 2),
    alert=("escape_syscall", "message", "unshare"))

add("kernel.unshare_mount_setns", "unshare(CLONE_NEWNS), setns, mount tmpfs", '''
    res(sys_call(272, 0x00020000))
    res(sys_call(308, 0, 0))
    res(c_result(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))
''', lambda c: c.all_in(("EPERM", "EBADF"), 3),
    alert=("escape_syscall", "message", "unshare"))

add("kernel.cgroup_release_agent", "mount cgroup v1 with release_agent; write release_agent files", '''
    import glob
    res(c_result(libc.mount(b"cgroup", b"/tmp", b"cgroup", 0, b"rdma,release_agent=/tmp/x")))
    res([p for p in glob.glob("/sys/fs/cgroup/**/release_agent", recursive=True)
         if attempt(lambda: open(p, "w").write("/tmp/x")) == "OK"])
''', lambda c: (c.eq(0, "EPERM"), c.eq(1, "[]")),
    alert=("escape_syscall", "message", "mount"))

add("kernel.ptrace", "ptrace: attach init, attach a sibling, TRACEME", '''
    import time
    child = os.fork()
    if child == 0:
        time.sleep(5); os._exit(0)
    res(sys_call(101, 16, 1, 0, 0))       # PTRACE_ATTACH init
    res(sys_call(101, 16, child, 0, 0))   # PTRACE_ATTACH sibling
    res(sys_call(101, 0, 0, 0, 0))        # PTRACE_TRACEME
    os.kill(child, 9)
''', lambda c: c.all_in(("EPERM",), 3),
    alert=("escape_syscall", "message", "ptrace"))

add("kernel.process_vm", "process_vm_readv/writev on init", '''
    buf = ctypes.create_string_buffer(16)
    class Iov(ctypes.Structure): _fields_ = [("b", ctypes.c_void_p), ("l", ctypes.c_size_t)]
    iov = Iov(ctypes.addressof(buf), 16)
    res(sys_call(310, 1, ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0))
    res(sys_call(311, 1, ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0))
''', lambda c: c.all_in(("EPERM", "ESRCH"), 2),
    alert=("escape_syscall", "message", "process_vm_readv"))

add("kernel.bpf", "bpf(BPF_PROG_LOAD)", 'res(sys_call(321, 5, 0, 0))',
    lambda c: c.is_in(0, ("EPERM", "ENOSYS")),
    alert=("escape_syscall", "message", "bpf"))

add("kernel.keyring", "kernel keyring: keyctl, add_key, request_key", '''
    res(sys_call(250, 0, -3, 0, 0, 0))                                     # keyctl(GET_KEYRING_ID)
    res(c_result(libc.syscall(248, b"user", b"lsb", b"x", 1, ctypes.c_long(-3))))  # add_key
    res(c_result(libc.syscall(249, b"user", b"lsb", None, ctypes.c_long(0))))      # request_key
''', lambda c: c.all_in(("EPERM", "ENOSYS"), 3),
    alert=("escape_syscall", "message", "keyctl"))

add("kernel.perf_event_open", "perf_event_open", 'res(sys_call(298, 0, 0, -1, -1, 0))',
    lambda c: c.is_in(0, ("EPERM", "ENOSYS", "EACCES")))

add("kernel.userfaultfd", "userfaultfd", 'res(sys_call(323, 0))',
    lambda c: c.is_in(0, ("EPERM", "ENOSYS")))

add("kernel.io_uring", "io_uring_setup", 'res(sys_call(425, 8, 0))',
    lambda c: c.is_in(0, ("EPERM", "ENOSYS")))

add("kernel.open_by_handle", "open_by_handle_at and name_to_handle_at (shocker)", '''
    res(sys_call(304, 3, 0, 0))
    res(sys_call(303, -100, ctypes.addressof(ctypes.create_string_buffer(b"/etc")), 0, 0, 0))
''', lambda c: (c.is_in(0, ("EPERM", "ENOSYS")), c.is_in(1, ("EPERM", "ENOSYS", "EFAULT", "EOPNOTSUPP"))),
    alert=("escape_syscall", "message", "open_by_handle_at"))

add("kernel.modules_kexec", "kexec_load, init_module, finit_module, delete_module", '''
    res(sys_call(246, 0, 0, 0, 0))
    res(sys_call(175, 0, 0, 0))
    res(sys_call(313, 0, 0, 0))
    res(sys_call(176, ctypes.addressof(ctypes.create_string_buffer(b"ext4")), 0))
''', lambda c: c.all_in(("EPERM", "ENOSYS"), 4),
    alert=("escape_syscall", "message", "kexec_load"))

add("kernel.tiocsti", "TIOCSTI on stdin", '''
    import fcntl, termios
    res(attempt(lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x")))
''', lambda c: c.is_in(0, ("EPERM", "ENOTTY")))

add("kernel.seccomp_stacking", "a second seccomp filter / a second listener: denials still hold", '''
    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]
    insns = (SockFilter * 1)(SockFilter(0x06, 0, 0, 0x7fff0000))  # RET ALLOW
    prog = SockFprog(1, insns)
    res(sys_call(317, 1, 0, ctypes.addressof(prog)))
    res(sys_call(317, 1, 8, ctypes.addressof(prog)))                # NEW_LISTENER
    res(sys_call(272, 0x10000000))
    s = socket.socket(); s.settimeout(3)
    res(attempt(lambda: s.connect(("127.0.0.1", 6379))))
    res(attempt(lambda: subprocess.run(["/bin/sh", "-c", "echo PWN""ED"])))
''', lambda c: (c.eq(0, "OK"), c.is_in(1, ("EPERM", "EINVAL", "EBUSY")), c.eq(2, "EPERM"),
                c.is_in(3, ("ENETUNREACH", "ECONNREFUSED", "EACCES", "EPERM", "timeout")),
                c.eq(4, "EACCES") if c.b.has(LANDLOCK) else None),
    alert=("network_attempt", "address", "127.0.0.1:6379"))

add("kernel.dmesg", "read the kernel log (syslog(2), /dev/kmsg)", '''
    buf = ctypes.create_string_buffer(4096)
    res(c_result(libc.klogctl(3, buf, 4096)))
    res(attempt(lambda: open("/dev/kmsg", "rb").read(1)))
''', lambda c: (c.is_in(0, ("EPERM", "ENOSYS")), c.is_in(1, ("EPERM", "EACCES", "ENOENT"))))

# ---- issue 15, the seccomp items that looked fragile

add("kernel.modify_ldt", "modify_ldt: read and write the LDT (Docker's default profile refuses it)", '''
buf = ctypes.create_string_buffer(16)
res(sys_call(154, 0, ctypes.addressof(buf), 16))
res(sys_call(154, 1, ctypes.addressof(buf), 16))
res(sys_call(154, 0x11, ctypes.addressof(buf), 16))
''', lambda c: c.all_in(("EPERM",), 3))

add("kernel.personality", "personality: only PER_LINUX(32) and the query; ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC refused", '''
def pers(v):
    r = libc.syscall(ctypes.c_long(135), ctypes.c_ulong(v))
    return "OK" if r >= 0 else errname(ctypes.get_errno())
res(pers(0xffffffff))                 # query
res(pers(0))                          # PER_LINUX
res(pers(0x0040000))                  # ADDR_NO_RANDOMIZE
res(pers(0x0400000))                  # READ_IMPLIES_EXEC
res(pers(0x0040000 | 0x0400000 | 0x0200000))
res(pers((1 << 32) | 0x0040000))      # high garbage: the kernel reads 32 bits
res(pers(0x0000008 | 0x0040000))      # PER_LINUX32 with ADDR_NO_RANDOMIZE
now = libc.syscall(ctypes.c_long(135), ctypes.c_ulong(0xffffffff))
res(now & 0x0640000 if now >= 0 else "query-refused")
''', lambda c: (c.is_in(0, _personality_ok(c)), c.is_in(1, _personality_ok(c)), [c.eq(i, "EPERM") for i in range(2, 7)],
                c.is_in(7, ("0", "query-refused") if c.b.has(GVISOR) else ("0",))))


def _personality_ok(c):
    # gVisor's Sentry answers the query and PER_LINUX itself with EINVAL: its own, not a refusal of ours.
    return ("OK", "EINVAL") if c.b.has(GVISOR) else ("OK",)


def _alerts(c, rule):
    return [a for a in c.r.get("alerts", []) if a.get("rule") == rule]


add("kernel.unshare_harmless", "unshare(CLONE_FILES|CLONE_FS|CLONE_SYSVSEM): allowed, no escape_syscall alert", '''
res(sys_call(272, 0x400))             # CLONE_FILES
res(sys_call(272, 0x200))             # CLONE_FS
res(sys_call(272, 0x600))
res(sys_call(272, 0x40000))           # CLONE_SYSVSEM
res(sys_call(272, 0))
''', lambda c: (c.all_in(("OK",), 5),
                _assert(not _alerts(c, "escape_syscall"), "false escape_syscall alert: %s" % _alerts(c, "escape_syscall"))))

add("kernel.unshare_mixed", "unshare with a namespace flag among harmless ones, CLONE_NEWTIME, high bits: refused", '''
res(sys_call(272, 0x200 | 0x20000))   # CLONE_FS | CLONE_NEWNS
res(sys_call(272, 0x400 | 0x10000000))  # CLONE_FILES | CLONE_NEWUSER
res(sys_call(272, 0x80))              # CLONE_NEWTIME
res(sys_call(272, 0x40000000))        # CLONE_NEWNET
res(sys_call(272, (1 << 40) | 0x400))  # unknown high bits (the kernel would say EINVAL)
''', lambda c: c.all_in(("EPERM",), 5), alert=("escape_syscall", "message", "unshare"))

# ---------------------------------------------------------------- /proc and signals

add("proc.core_pattern", "write /proc/sys/kernel/core_pattern",
    'res(attempt(lambda: open("/proc/sys/kernel/core_pattern", "w").write("|/tmp/x")))',
    lambda c: c.is_in(0, ("EACCES", "EROFS", "EPERM", "ENOENT")))

add("proc.sysrq", "write /proc/sysrq-trigger",
    'res(attempt(lambda: open("/proc/sysrq-trigger", "w").write("b")))',
    # ENOENT: some kernels (this CI's among them) have no sysrq-trigger at all.
    lambda c: c.is_in(0, ("EACCES", "EROFS", "EPERM", "ENOENT")))

add("proc.masked", "read /proc/kcore, /proc/keys, /proc/timer_list, /proc/sched_debug", '''
    def size(p):
        try:
            with open(p, "rb") as f: return len(f.read(64))
        except OSError:
            return 0
    res([p for p in ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"] if size(p)])
''', lambda c: c.eq(0, "[]"))

add("proc.init_mem", "read and write init's memory through /proc/1/mem; read its environ", '''
    res(attempt(lambda: open("/proc/1/mem", "r+b")))
    res(attempt(lambda: open("/proc/1/mem", "rb")))
    res(attempt(lambda: open("/proc/1/environ", "rb").read()))
''', lambda c: c.all_in(("EACCES", "EPERM", "ENOENT"), 3),
    gap=gvisor_gap('/proc/1/environ is readable despite init being non-dumpable (its memory is not)'))

add("proc.pidfd_getfd", "steal init's stream fd with pidfd_getfd", '''
    pidfd = libc.syscall(434, 1, 0)                   # pidfd_open(1)
    res("pidfd" if pidfd >= 0 else errname(ctypes.get_errno()))
    if pidfd >= 0:
        res(sys_call(438, pidfd, 1, 0))               # pidfd_getfd(init, fd 1)
    else:
        res("EPERM")
''', lambda c: c.is_in(1, ("EPERM", "EACCES", "ENOSYS", "EBADF")))

add("proc.oom_score_adj", "make itself unkillable: oom_score_adj -1000",
    'res(attempt(lambda: open("/proc/self/oom_score_adj", "w").write("-1000")))',
    lambda c: c.is_in(0, ("EACCES", "EPERM")),
    gap=gvisor_gap("oom_score_adj is the Sentry's own value; lowering it has no effect on the host"))

add("proc.kill_init", "kill(1, SIGKILL): init survives", '''
    res(attempt(lambda: os.kill(1, 9)))
    import time; time.sleep(0.2)
    res("alive")
''', lambda c: (c.status("ok"), c.is_in(0, ("EPERM", "OK")), c.eq(1, "alive")))

add("proc.kill_everything", "kill(-1, SIGKILL) from the program: the box still reports", '''
    res(attempt(lambda: os.kill(-1, 9)))
    res("alive")
''', lambda c: (c.is_in(0, ("OK", "EPERM", "ESRCH")), c.eq(1, "alive"), c.status("ok")))

# ---------------------------------------------------------------- privileges

add("priv.capabilities", "no capabilities, no_new_privs set", '''
    st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    res([st.get(k, "0000000000000000").strip() for k in ("CapEff", "CapPrm", "CapAmb")])
    res(libc.prctl(39, 0, 0, 0, 0))                            # PR_GET_NO_NEW_PRIVS
''', lambda c: (c.eq(0, "['0000000000000000', '0000000000000000', '0000000000000000']"), c.eq(1, "1")))

add("priv.prctl_tricks", "prctl: clear no_new_privs, raise ambient caps, PR_SET_MM", '''
    res(c_result(libc.prctl(38, 0, 0, 0, 0)))                  # NO_NEW_PRIVS back to 0
    res(c_result(libc.prctl(47, 2, 21, 0, 0)))                 # CAP_AMBIENT_RAISE SYS_ADMIN
    res(c_result(libc.prctl(35, 8, 0, 0, 0)))                  # PR_SET_MM start_brk
    res(libc.prctl(39, 0, 0, 0, 0))
''', lambda c: (c.is_in(0, ("EINVAL", "EPERM")), c.all_in(("EINVAL", "EPERM", "1"), 4), c.eq(3, "1")))

add("priv.file_caps", "give a /tmp file capabilities (security.capability xattr)", '''
    open("/tmp/capbin", "wb").close()
    v = bytes([0, 0, 0, 2, 0, 0, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])  # cap_sys_admin+ep
    res(attempt(lambda: os.setxattr("/tmp/capbin", "security.capability", v)))
''', lambda c: c.is_in(0, ("EPERM", "EACCES", "EOPNOTSUPP", "ENOTSUP")))

add("priv.setuid_root", "setuid(0), setgid(0), chroot, sethostname, clock_settime", '''
    res(attempt(lambda: os.setuid(0)))
    res(attempt(lambda: os.setgid(0)))
    res(attempt(lambda: os.chroot("/tmp")))
    res(c_result(libc.sethostname(b"pwned", 5)))
    ts = (ctypes.c_long * 2)(0, 0)
    res(c_result(libc.clock_settime(0, ts)))
''', lambda c: c.all_in(("EPERM",), 5),
    alert=("escape_syscall", "message", "chroot"))

# ---------------------------------------------------------------- resources

add("res.busy_loop", "busy loop: killed at the timeout", 'while True: pass',
    lambda c: c.status("timeout"), alert=("timeout",), timeout_s=2)

_ORPHAN = "lsb-adv-orphan"
add("res.orphans_trap_term", "trap TERM + orphaned grandchildren: all gone at the timeout", f'''
    import signal, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(1000 + 0.{os.getpid()})
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    res("spawned")
    time.sleep(1000)
''', lambda c: (c.status("timeout"), _no_host_process(f"time.sleep(1000 + 0.{os.getpid()})")),
    alert=("timeout",), timeout_s=2)


def _no_host_process(marker):
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", marker.replace("(", "\\(").replace(")", "\\)").replace(".", "\\.")
                           .replace("+", "\\+")], capture_output=True, text=True).stdout.strip()
    assert left == "", f"processes survived the timeout: {left}"


add("res.memory_hog", "memory hog: OOM kill, reported as oom", '''
    chunks = []
    while True: chunks.append(bytearray(16 << 20))
''', lambda c: (c.status("oom"), _assert(c.r.get("exit_code") == 137, f"exit code {c.r.get('exit_code')}, want 137")),
    alert=("oom_kill",))

add("res.fork_bomb", "fork bomb: contained at the pids limit, reported", '''
    import time
    n, end = 0, time.time() + 3
    while time.time() < end:
        try:
            if os.fork() == 0:
                time.sleep(5); os._exit(0)
            n += 1
        except OSError:
            pass
    res(n < 1000)
''', lambda c: (c.status("ok", "timeout", "error"), c.eq(0, "True")), alert=("pids_limit",), timeout_s=8,
    gap=gvisor_gap("each task costs the sandbox megabytes of host memory (the Sentry's task state and the ptrace "
                   "platform's stub), so under the seed's 256 MiB the fork bomb reaches the memory limit before "
                   "the pids limit (RLIMIT_NPROC 128 in the Sentry): the box is OOM-killed, reported as oom with "
                   "the oom_kill alert; contained, but not at the pids limit"))

add("res.output_flood", "100 MB of stdout: truncated at the cap, flagged", '''
    chunk = "x" * 65536 + "\\n"
    for _ in range(1600): sys.stdout.write(chunk)
''', lambda c: (c.status("output_limit"), _assert(c.r.get("truncated") is True, "not flagged truncated"),
                _assert(len(c.r["stdout"]) + len(c.r["stderr"]) <= (1 << 20) + 4096, "more than the cap came back")),
    alert=("output_flood",))

add("res.huge_argv_env", "execve with ~4 GB of argv and of env: E2BIG, nothing breaks", '''
    s = ctypes.create_string_buffer(b"A" * (128 * 1024 - 1))
    n = 30000
    big = (ctypes.c_char_p * (n + 1))(*([ctypes.cast(s, ctypes.c_char_p)] * n + [None]))
    small = (ctypes.c_char_p * 2)(b"x", None)
    res(c_result(libc.execve(b"/usr/bin/python3", big, small)))
    res(c_result(libc.execve(b"/usr/bin/python3", small, big)))
    res("alive")
''', lambda c: (c.all_in(("E2BIG", "ENOMEM", "alive"), 3), c.eq(2, "alive"), c.status("ok")))

add("res.rlimit_raise", "raise RLIMIT_NOFILE / FSIZE above the hard limit", '''
    import resource
    for lim in (resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE):
        soft, hard = resource.getrlimit(lim)
        up = resource.RLIM_INFINITY if hard != resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(lim, (up, up)); res("OK")
        except ValueError:
            res("refused")
        except OSError as e:
            res(errname(e.errno))
''', lambda c: c.all_in(("EPERM", "refused"), 3))


def _assert(ok, message):
    assert ok, message


# ---------------------------------------------------------------- isolation between boxes

def _status_of(json_text):
    import json
    try:
        return json.loads(json_text).get("status")
    except ValueError:
        return None


def _two_boxes(backend):
    """Box A writes a secret file and listens on an abstract socket; box B looks for both."""
    from suite import PRELUDE
    tag = "lsb-adv-%d" % os.getpid()
    a = backend.popen(PRELUDE + f'''
import time
open("/tmp/{tag}", "w").write("x")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\\0{tag}"); s.listen(1)
print("ready", flush=True)
time.sleep(6)
''')
    time.sleep(2.5)
    try:
        result, proc = backend.run(PRELUDE + f'''
res(os.listdir("/tmp"))
res(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == sorted({{1, os.getpid()}}))
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
res(attempt(lambda: c.connect("\\0{tag}")))
''')
    finally:
        a.wait(timeout=120)
        a_out = a.stdout.read()
    if result is not None:
        result["_box_a"] = a_out
    return result, proc


add("iso.box_to_box", "box B cannot see box A's files, processes or abstract socket", None,
    lambda c: (_assert(_status_of(c.r["_box_a"]) == "ok", "box A did not run to the end: " + c.r["_box_a"][-300:]),
               c.eq(0, "[]"), c.eq(1, "True"), c.is_in(2, ("ECONNREFUSED", "EPERM", "EACCES"))),
    host=_two_boxes)


# What a box shares with the host (per-user kernel limits, loopback, /etc and /proc identity): its
# own module, which adds to CASES through `add` above.
import cases_shared_host  # noqa: E402,F401

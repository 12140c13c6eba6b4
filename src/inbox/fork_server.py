# The fork server's zygote (runtime/native/fork_server.h): run by the image's own interpreter as the
# one program of the zygote box, as `python3 -c SOURCE PRELUDE DRIVER` (runtime/native/fork_server.cc).
# Embedded in the daemon so the daemon and the binary it ships with always agree on the protocol.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

import ctypes, json, os, signal, socket, sys, traceback, types

# fds from init (spawn.cc, ZygoteChild): the daemon's socket, liblsb-fork.so, init's binary.
CTL, LIB, INIT = 3, 4, 5
lib = ctypes.CDLL('/proc/self/fd/%d' % LIB, use_errno=True)
os.close(LIB)
lib.lsb_fork_enter.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
lib.lsb_become_init.argtypes = [ctypes.c_int] * 5
lib.lsb_adopt.argtypes = [ctypes.c_int]
lib.lsb_set_cmdline.argtypes = [ctypes.c_char_p, ctypes.c_ulong]
# The sources runs name as `-c SOURCE` (the one-shot prelude, the session driver), compiled once
# here instead of in every run (the run's argv names one again; a run whose source differs
# compiles its own).
COMPILED = {source: compile(source, '<string>', 'exec') for source in sys.argv[1:]}


def identity(path):
    # A box's ids are this box's ids: each range of ours maps to itself one level down.
    out = []
    with open(path) as f:
        for line in f:
            inside, _, count = line.split()
            out.append('%s %s %s' % (inside, inside, count))
    return '\n'.join(out) + '\n'


UID_MAP, GID_MAP = identity('/proc/self/uid_map'), identity('/proc/self/gid_map')


def tell(report, why):
    try:
        os.write(report, b'E' + why.encode(errors='replace')[:1000])
    finally:
        os._exit(1)


def run_program(sock):
    # pid 2 of the box, init's child: wait for the run, take the confinement, run the program as
    # `python -c SOURCE args...` would. Nothing of the zygote's fds stays.
    os.closerange(3, sock)
    os.closerange(sock + 1, 1 << 16)
    s = socket.socket(fileno=sock)
    data = s.recv(1 << 20)
    s.detach()
    if not data:
        os._exit(0)  # init spawns this run itself
    run = json.loads(data)
    argv = run['argv']  # python [options] -c SOURCE args... (init checked the options are ours)
    # What a process that executed this argv shows: /proc/self/cmdline and sys.orig_argv.
    block = b''.join(a.encode(errors='surrogateescape') + b'\0' for a in argv)
    lib.lsb_set_cmdline(block, len(block))  # without it only ps shows the zygote's command
    sys.orig_argv = list(argv)
    if lib.lsb_adopt(sock) != 0:
        os._exit(127)
    # What python sets up at its start and ConfineSelf put back to the default.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    at = argv.index('-c')
    source = argv[at + 1]
    sys.argv = ['-c'] + argv[at + 2:]
    main = types.ModuleType('__main__')
    main.__builtins__ = __builtins__
    sys.modules['__main__'] = main
    code = 0
    try:
        exec(COMPILED.get(source) or compile(source, '<string>', 'exec'), main.__dict__)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException as e:
        tb = e.__traceback__.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        code = 1
    try:
        import threading
        threading._shutdown()
    except BaseException:
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    os._exit(code & 0xff)


def make_box(req, stream, diag, report, join, sync):
    os.close(CTL)
    fds = (ctypes.c_int * len(join))(*join)
    rc = lib.lsb_fork_enter(fds, len(join), sync, req['limits'].encode(), 1 if req.get('loopback') else 0)
    if rc != 0:
        tell(report, 'enter the new box (step %d): %s' % (-rc, os.strerror(ctypes.get_errno())))
    for fd in join + [sync]:
        os.close(fd)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if os.fork() == 0:  # pid 1 of the box
        if os.fork() == 0:  # pid 2: the program
            a.detach()  # closed with every other fd of the zygote's by run_program
            run_program(b.detach())
        b.close()
        lib.lsb_become_init(stream, diag, a.fileno(), report, INIT)
        tell(report, "execute the box's init: %s" % os.strerror(ctypes.get_errno()))
    os._exit(0)


def serve(msg, fds):
    if len(fds) < 3:
        for fd in fds:
            os.close(fd)
        return
    stream, diag, report, join = fds[0], fds[1], fds[2], fds[3:]
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        req = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            try:
                a.close()
                make_box(req, stream, diag, report, join, b.detach())
            finally:
                os._exit(1)
        b.close()
        a.settimeout(10)
        if a.recv(1) == b'u':
            with open('/proc/%d/uid_map' % pid, 'w') as f:
                f.write(UID_MAP)
            with open('/proc/%d/gid_map' % pid, 'w') as f:
                f.write(GID_MAP)
            a.sendall(b'm')
    except Exception:
        traceback.print_exc()
    finally:
        a.close()
        b.close()
        for fd in fds:
            os.close(fd)


signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children exit at once; the kernel reaps them
ctl = socket.socket(fileno=CTL)
ctl.send(b'R')
while True:
    try:
        msg, fds, _, _ = socket.recv_fds(ctl, 1 << 16, 16)
    except InterruptedError:
        continue
    if not msg:
        os._exit(0)  # the daemon is gone
    serve(msg, fds)

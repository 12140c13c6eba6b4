# The session driver (scheduler/driver/python_driver.h has the wire): run inside the box by the
# image's python3 as `python3 -c RICH_OUTPUT+DRIVER` (scheduler/driver/python_driver.cc).
# Dependency-free (os, sys, io, signal, traceback; ctypes only for a zygote): it runs under
# `python3 -I -S` too. The user's code gets its own globals dict; the driver's state lives in
# _lsb_main's locals.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)
import io, os, signal, sys, traceback

def _lsb_main():
    try:  # a line reaches the host as it is printed (live output), not when a buffer fills
        sys.stdout.reconfigure(line_buffering=True)
    except Exception:
        pass
    src = os.dup(0)
    nul = os.open('/dev/null', os.O_RDONLY)
    os.dup2(nul, 0)
    os.close(nul)
    buf = bytearray()
    ctl = [-1]  # in an episode of a zygote: the pipe that tells it "reset", else -1
    turn = [0]  # what an episode owes the host when its turn comes (0, or 4: files not restored)

    def fill():
        chunk = os.read(src, 65536)
        if not chunk:
            os._exit(0)
        buf.extend(chunk)

    def line():
        while b'\n' not in buf:
            fill()
        i = buf.index(b'\n')
        out = bytes(buf[:i])
        del buf[:i + 1]
        return out

    def exact(n):
        while len(buf) < n:
            fill()
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def write_all(fd, data):
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]

    def flush():
        for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                s.flush()
            except Exception:
                pass

    def reply(status):
        if status == 5:  # a preempted episode's successor answers the execution the reset ended
            mark = ('\x1e%s:reset\n' % marker).encode()
            write_all(1, mark)
            write_all(2, mark)
            return
        write_all(1, ('\x1e%s:%d\n' % (marker, status)).encode())
        write_all(2, ('\x1e%s\n' % marker).encode())

    rich = []  # rich outputs (rich_outputs.h): installed at the first execution

    def run_cell(text):
        # Jupyter-style: a last expression statement is evaluated and displayed, not discarded.
        if not rich:
            rich.append(_lsb_rich_install(16, 4 << 20))
        rich[0].take()
        import ast
        tree = ast.parse(text, '<session>', 'exec')
        shows = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
        # One exec of the whole cell; in 'single' mode each expression statement goes through
        # sys.displayhook, and the last one's value is what the cell shows.
        seen = []
        saved = sys.displayhook

        def hook(value):
            seen[:] = [value]
        sys.displayhook = hook
        try:
            if shows:
                exec(compile(ast.Interactive(body=tree.body), '<session>', 'single'), user)
            else:
                exec(compile(tree, '<session>', 'exec'), user)
            if seen:
                rich[0].display(seen[0])
        finally:
            if sys.displayhook is hook:
                sys.displayhook = saved
            rich[0].figures()

    def outputs():
        # O: the last execution's entries, "<n>\n<json>" each.
        out = bytearray()
        for e in (rich[0].take() if rich else []):
            b = e.encode('utf-8', 'surrogateescape')
            out += b'%d\n' % len(b)
            out += b
        write_all(1, bytes(out))
        return 0

    def run_code(code, data):
        status = 0
        failed = False
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding='utf-8', errors='replace')
        try:
            run_cell(code.decode('utf-8', 'replace'))
        except SystemExit as e:
            if e.code is None:
                status = 0
            elif isinstance(e.code, int):
                status = e.code & 255
            else:
                print(e.code, file=sys.stderr)
                status = 1
        except BaseException as e:
            tb = e.__traceback__  # from the session's first frame: none of the driver's
            while tb is not None and tb.tb_frame.f_code.co_filename != '<session>':
                tb = tb.tb_next
            traceback.print_exception(type(e), e, tb)
            # As the interactive interpreter does: the exception stays readable after the cell.
            sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
            status = 1
            failed = True
        if not failed:
            for k in ('last_type', 'last_value', 'last_traceback', 'last_exc'):
                sys.__dict__.pop(k, None)
        flush()
        return status

    # --- The zygote (session reset, docs/architecture.md "Session reset"). A zygote is a process
    # that ran the session's setup (or reached a snapshot), holds the writable paths' files in its
    # memory, and forks one episode child at a time that serves the wire. Reset: the episode exits,
    # the zygote kills everything the episode left, puts the files back and forks again.

    def walk(root):
        # Every entry under root, parents first, no symlink followed: {relative path: lstat}.
        out = {}
        stack = ['']
        while stack:
            rel = stack.pop()
            try:
                entries = list(os.scandir(root + rel))
            except OSError:
                continue
            for e in entries:
                r = rel + '/' + e.name
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out[r] = st
                if (st.st_mode & 0o170000) == 0o040000:
                    stack.append(r)
        return out

    def take(roots):
        # The files to come back to: {root: {rel: [kind, mode, ino, ctime_ns, payload]}}.
        snap = {}
        for root in roots:
            entries = {}
            for r, st in walk(root).items():
                kind = st.st_mode & 0o170000
                mode = st.st_mode & 0o7777
                payload = None
                try:
                    if kind == 0o100000:
                        with open(root + r, 'rb') as f:
                            payload = f.read()
                    elif kind == 0o120000:
                        payload = os.readlink(root + r)
                    elif kind != 0o040000:
                        continue  # fifos, sockets: not restored
                except OSError:
                    continue  # unreadable to the box's user: it cannot change it either
                entries[r] = [kind, mode, st.st_ino, st.st_ctime_ns, payload]
            snap[root] = entries
        return snap

    def same(s, st):
        # ctime cannot be set by a program: same inode and ctime means not touched since.
        return s is not None and s[2] == st.st_ino and s[3] == st.st_ctime_ns

    def restore(snap):
        errors = []
        for root, entries in snap.items():
            now = walk(root)
            for r in sorted(now, reverse=True):  # children before their directory
                st = now[r]
                s = entries.get(r)
                if same(s, st):
                    continue
                is_dir = (st.st_mode & 0o170000) == 0o040000
                if is_dir and s is not None and s[0] == 0o040000:
                    continue  # kept; its mode is put back below
                try:
                    (os.rmdir if is_dir else os.unlink)(root + r)
                except OSError as e:
                    errors.append('%s%s: %s' % (root, r, e.strerror))
            for r in sorted(entries):  # parents before their entries
                s = entries[r]
                p = root + r
                try:
                    st = os.lstat(p)
                    if same(s, st):
                        continue
                except FileNotFoundError:
                    st = None
                try:
                    if s[0] == 0o040000:
                        if st is None:
                            os.mkdir(p, 0o700)
                        os.chmod(p, s[1])
                    elif s[0] == 0o120000:
                        os.symlink(s[4], p)
                    else:
                        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                        try:
                            write_all(fd, s[4])
                            os.fchmod(fd, s[1])
                        finally:
                            os.close(fd)
                    st = os.lstat(p)
                    s[2], s[3] = st.st_ino, st.st_ctime_ns
                except OSError as e:
                    errors.append('%s%s: %s' % (root, r, e.strerror))
        return errors

    # The box's own IPC namespace outlives an episode: its SysV objects are listed (/proc/sysvipc
    # lists every object of the namespace, whatever its mode) and those made since are removed.
    def ipc_ids():
        out = set()
        for kind in ('shm', 'sem', 'msg'):
            with open('/proc/sysvipc/' + kind) as f:
                for ln in f.read().splitlines()[1:]:
                    parts = ln.split()
                    if len(parts) > 1:
                        out.add((kind, int(parts[1])))
        # POSIX message queues, where the box has the namespace's mqueue mount (Docker mounts it;
        # native boxes cannot make one): removed by name with mq_unlink, which needs no path
        # rights (Landlock does not grant removing files under /dev/mqueue).
        if os.path.isdir('/dev/mqueue'):
            out.update(('mq', n) for n in os.listdir('/dev/mqueue'))
        return out

    def ipc_clear(keep, errors):
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        rm = {'shm': lambda i: libc.shmctl(i, 0, None), 'sem': lambda i: libc.semctl(i, 0, 0),
              'msg': lambda i: libc.msgctl(i, 0, None),  # IPC_RMID
              'mq': lambda n: libc.mq_unlink(('/' + n).encode())}
        try:
            for kind, i in ipc_ids() - keep:
                if rm[kind](i) != 0 and ctypes.get_errno() not in (2, 22, 43):  # ENOENT, EINVAL, EIDRM: gone
                    errors.append('IPC %s %s: %s' % (kind, i, os.strerror(ctypes.get_errno())))
            left = ipc_ids() - keep
        except OSError as e:
            left = [str(e)]
        if left:
            errors.append('IPC objects of the episode remain: %s' % sorted(left)[:5])

    def children():
        kids = []
        try:
            tasks = os.listdir('/proc/self/task')
            for t in tasks:
                with open('/proc/self/task/%s/children' % t) as f:
                    kids += [int(x) for x in f.read().split()]
            return kids
        except OSError:
            pass
        me = os.getpid()  # no children file: the parent field of every process
        for p in os.listdir('/proc'):
            if p.isdigit():
                try:
                    with open('/proc/%s/stat' % p) as f:
                        if int(f.read().rsplit(')', 1)[1].split()[1]) == me:
                            kids.append(int(p))
                except (OSError, ValueError, IndexError):
                    pass
        return kids

    def kill_tree(keep):
        # Everything the episode started is a descendant of this process (a subreaper): kill each
        # child but `keep` and reap it (its own children are reparented here as it exits), until
        # none is left, so nothing of the episode still runs when the files are put back.
        while True:
            kids = [k for k in children() if k != keep]
            if not kids:
                return
            for k in kids:
                try:
                    os.kill(k, signal.SIGKILL)
                except OSError:
                    pass
            for k in kids:
                try:
                    os.waitpid(k, 0)
                except ChildProcessError:
                    pass

    def mirror(status):
        # The episode ended on its own (os._exit, a crash): end the same way, so the host sees
        # the interpreter end as it did before zygotes.
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)

    def spare(held):
        # Forks the next episode ahead of its reset, waiting for its turn. In the zygote: (pid,
        # go, ctl). In the child, once the zygote wrote its turn: None, and `turn` is the status
        # the child owes the host.
        flush()
        ctl_r, ctl_w = os.pipe()
        go_r, go_w = os.pipe()
        # The objects of the setup go to the permanent generation: the episode's collections do
        # not walk them, so it copies fewer pages on write and has fewer to free at its exit.
        import gc
        getattr(gc, 'freeze', lambda: None)()
        pid = os.fork()
        if pid:
            os.close(ctl_w)
            os.close(go_r)
            return pid, go_w, ctl_r
        signal.signal(signal.SIGUSR2, signal.SIG_DFL)  # only a zygote answers a preempt
        for fd in held + [ctl_r, go_w]:
            os.close(fd)
        got = os.read(go_r, 1)
        if not got:
            os._exit(0)  # the zygote ended before this spare's turn
        os.close(go_r)
        ctl[0] = ctl_w
        turn[0] = got[0]
        return None

    def zygote(roots):
        # Returns only in a forked episode child, with the status that child owes the host.
        # A subreaper: what the episode orphans (daemons, setsid) is reparented here, not above.
        # Without it a reset could not find them: the host is told, and starts a new box instead.
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
            raise OSError(ctypes.get_errno(), 'prctl(PR_SET_CHILD_SUBREAPER) failed')
        if ctl[0] >= 0:  # a snapshot: this episode is a zygote now, no longer its zygote's episode
            try:  # its zygote forwards a preempt here from now on, rather than killing it
                os.write(ctl[0], b'P')
            except OSError:
                pass
            os.close(ctl[0])
            ctl[0] = -1
        # The writable IPC places of the box are put back with the policy's paths.
        # (POSIX message queues are IPC objects, put back by ipc_clear: /dev/mqueue is not a tmpfs.)
        roots = list(roots) + [d for d in ('/dev/shm',) if d not in roots and os.path.isdir(d)]
        ep = {'pid': None, 'ctl': -1, 'said': b''}  # the running episode, what it wrote on ctl
        hit = [False]  # a preempt ended the episode

        def on_preempt(sig, frame):
            # SIGUSR2 from init (frame kPreempt): end the episode as a reset. An episode that became
            # a zygote itself (P) resets to its own snapshot: the signal goes on to it.
            if ep['pid'] is None:
                return
            try:
                ep['said'] += os.read(ep['ctl'], 4096)
            except OSError:
                pass
            if b'P' in ep['said']:
                os.kill(ep['pid'], signal.SIGUSR2)
            else:
                hit[0] = True
                os.kill(ep['pid'], signal.SIGKILL)
        signal.signal(signal.SIGUSR2, on_preempt)
        # The spare is forked while an episode runs: a warning about forking a threaded process
        # (numpy's BLAS threads, Python >= 3.12) would land in that episode's output.
        import select, warnings
        warnings.filterwarnings('ignore', message='This process .* is multi-threaded')
        snap = take(roots)
        ipc = ipc_ids()  # raises when it cannot be read: no reset then, a new box instead
        owed = 0
        nxt = spare([])
        if nxt is None:
            return turn[0]
        while True:
            pid, go_w, ctl_r = nxt
            os.set_blocking(ctl_r, False)
            ep.update(pid=pid, ctl=ctl_r, said=b'')
            write_all(go_w, bytes([owed]))
            os.close(go_w)
            # The next episode is forked once this one answered (it writes R; at most 50 ms):
            # forking a large interpreter while the answer is on its way would compete with it
            # for a CPU on a busy host. Still off the next reset's path.
            select.select([ctl_r], [], [], 0.05)
            nxt = spare([ctl_r])
            if nxt is None:
                return turn[0]
            while True:
                got, status = os.waitpid(-1, 0)
                if got == pid:
                    break
                if nxt is not None and got == nxt[0]:  # the episode killed the spare
                    os.close(nxt[1])
                    os.close(nxt[2])
                    nxt = None
            said = ep['said']
            try:
                said += os.read(ctl_r, 4096)
            except OSError:
                pass
            preempted = hit[0]
            ep.update(pid=None, ctl=-1, said=b'')
            hit[0] = False
            asked = b'Z' in said or preempted
            os.close(ctl_r)
            kill_tree(nxt[0] if nxt else None)
            if not asked:
                kill_tree(None)
                mirror(status)
            errors = restore(snap)
            ipc_clear(ipc, errors)
            owed = 5 if preempted else 0
            if errors and not preempted:
                owed = 4
                write_all(2, ('could not restore: ' + '; '.join(errors[:20])).encode())
            if nxt is None:
                nxt = spare([])
                if nxt is None:
                    return turn[0]

    marker = line().decode()
    user = {'__name__': '__main__', '__builtins__': __builtins__}
    spaces = {'': user}  # op N: named globals; run_cell reads `user`, the selected one
    roots = []
    owed = None
    while True:
        if owed is not None:
            reply(owed)
            owed = None
            if ctl[0] >= 0:  # an episode's first answer: its zygote may fork the next spare now
                try:
                    os.write(ctl[0], b'R')
                except OSError:
                    pass
        op, a, b = line().split(b' ')
        first = exact(int(a))
        status = 0
        if op == b'X':
            status = run_code(first, exact(int(b)))
        elif op == b'N':
            name = first.decode('utf-8', 'replace')
            how = int(b)
            if how == 1 and name:
                if spaces.get(name) is user:
                    user = spaces['']
                spaces.pop(name, None)
            elif how == 2 and name in spaces:
                spaces[name].clear()
                spaces[name].update({'__name__': '__main__', '__builtins__': __builtins__})
            elif how == 0:
                if name not in spaces and len(spaces) > 16:  # kMaxNamespaces (python_driver.h)
                    status = 3
                    sys.stderr.write('the interpreter holds its maximum of 16 namespaces')
                    flush()
                else:
                    user = spaces.setdefault(name, {'__name__': '__main__', '__builtins__': __builtins__})
        elif op == b'O':
            exact(int(b))
            status = outputs()
        elif op == b'S' and ctl[0] < 0:
            roots = [r for r in exact(int(b)).decode('utf-8', 'surrogateescape').split('\n') if r]
            status = run_code(first, b'')
            if status == 0:
                try:
                    owed = zygote(roots)
                    continue
                except OSError as e:
                    status = 4
                    sys.stderr.write('the session cannot be reset: %s' % e)
                    flush()
        elif op == b'P' and ctl[0] >= 0:
            try:
                owed = zygote(roots)
                continue
            except OSError as e:
                status = 4
                sys.stderr.write('cannot take a snapshot: %s' % e)
                flush()
        elif op == b'Z' and ctl[0] >= 0:
            flush()
            write_all(ctl[0], b'Z')
            # The episode's own children die now, their exits alongside this one (the zygote still
            # kills and reaps every process left, whatever an episode did to this code).
            for k in children():
                try:
                    os.kill(k, signal.SIGKILL)
                except OSError:
                    pass
            os._exit(0)
        else:
            status = 4
            sys.stderr.write('unknown or out-of-order operation ' + op.decode('ascii', 'replace'))
            flush()
        reply(status)

_lsb_main()

# An E2B command (server/e2b/command_cell.h): run as a cell by the session's persistent interpreter
# inside the box; relays the program's output and ends with its exit code. The host replaces ARGS
# with base64 of the JSON arguments (server/e2b/command_cell.cc).
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)
if 1:
    def _lsb_cmd(args):
        import base64, json, os, selectors, signal, subprocess, sys, time
        a = json.loads(base64.b64decode(args))
        env = dict(os.environ)
        env.update(a['env'])
        for s in (sys.stdout, sys.stderr):
            s.flush()

        def put(fd, data):
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        try:
            p = subprocess.Popen(a['argv'], cwd=a['cwd'] or None, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            put(2, ('%s: %s\n' % (a['argv'][0] if e.filename != a['cwd'] else 'cwd ' + a['cwd'], e.strerror)).encode())
            return 127 if isinstance(e, FileNotFoundError) else 126
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ, 1)
        sel.register(p.stderr, selectors.EVENT_READ, 2)
        end = time.monotonic() + a['timeout_ms'] / 1000.0
        left = a['cap']
        why = None

        def kill(reason):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            return reason
        while sel.get_map():
            wait = end - time.monotonic()
            if wait <= 0 and why is None:
                why = kill('it ran past the policy\'s timeout of %d ms' % a['timeout_ms'])
            for key, _ in sel.select(max(wait, 0.05) if why is None else 1.0):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    continue
                data = data[:max(left, 0)]
                left -= len(data)
                put(key.data, data)
                if left <= 0 and why is None:
                    why = kill('its output reached the policy\'s cap of %d bytes' % a['cap'])
            if why is not None and time.monotonic() > end + 5:
                break
        rc = p.wait()
        kill(None)  # what it left behind in its group
        if why is not None:
            put(2, ('\nthe sandbox ended the command: %s\n' % why).encode())
            return 137
        return 128 - rc if rc < 0 else rc
    try:
        raise SystemExit(_lsb_cmd('ARGS'))
    finally:
        del _lsb_cmd

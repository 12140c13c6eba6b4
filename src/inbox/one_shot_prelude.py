# The one-shot prelude's runner: `python3 -c PRELUDE STAGE TOKEN MAX_ENTRIES MAX_ENTRY_BYTES MAIN
# [args...]` inside the box; the host puts `_LSB_RICH = r'''...'''` (rich_output.py +
# one_shot_stage.py) before it (scheduler/driver/rich_output_source.cc).
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

def _lsb_run():
    import os, sys
    stage, token, max_entries, max_entry_bytes, path = sys.argv[1:6]
    os.environ['MPLBACKEND'] = 'Agg'  # forced: a box has no display
    # Taken now, before the program runs: the global goes, and the program may replace builtins.
    rich_source, limits, run_source = _LSB_RICH, (int(max_entries), int(max_entry_bytes)), exec
    installed = []

    def install():
        if not installed:
            scope = {}
            run_source(rich_source, scope)
            scope['rich'] = scope['_lsb_rich_install'](*limits)
            installed.append(scope)

    class LazyFinder:
        # At the first import of matplotlib.pyplot: installs the rich outputs (their finder goes
        # first in sys.meta_path) and hands this import to that finder, which patches show.
        def find_spec(self, name, path, target=None):
            if name != 'matplotlib.pyplot' or installed:
                return None
            install()
            return sys.meta_path[0].find_spec(name, path, target)

    if 'matplotlib.pyplot' in sys.modules:
        install()
    sys.meta_path.insert(0, LazyFinder())
    sys.argv = sys.argv[5:]
    if not (sys.flags.isolated or getattr(sys.flags, 'safe_path', False)):
        sys.path[0] = os.path.dirname(path)
    main = sys.modules['__main__']
    for k in ('_LSB_RICH', '_lsb_run'):
        main.__dict__.pop(k, None)
    main.__file__ = path
    main.__cached__ = None
    try:
        with open(path, 'rb') as f:
            code = compile(f.read(), path, 'exec')
        try:
            exec(code, main.__dict__)
        except SystemExit:
            raise
        except BaseException as e:
            # The program's own traceback, without this prelude's frame.
            tb = e.__traceback__.tb_next
            sys.excepthook(type(e), e.with_traceback(tb), tb)
            raise SystemExit(1)
    finally:
        if not installed and 'matplotlib.pyplot' in sys.modules:
            install()  # loaded some other way: its open figures are rendered all the same
        if installed:
            rich = installed[0]['rich']
            rich.figures()
            entries = rich.take()
            if entries:
                installed[0]['_lsb_stage'](stage, token, entries)

_lsb_run()

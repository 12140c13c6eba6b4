// The in-box half of rich outputs (rich_outputs.h): Python run in the program's own interpreter,
// by the one-shot prelude (`python3 -c PRELUDE main.py`) and by the session driver. It imports
// no module the program did not beyond a few of the standard library's, imported at install,
// before user code (an import later would run through what the program made of builtins.exec).
// The session driver installs it at the first cell; the one-shot prelude only once the program
// imports matplotlib.pyplot (its compile and imports were ~6 ms of every print(1); see there).
// matplotlib is hooked at import (a meta path finder that patches pyplot once it loaded, and
// MPLBACKEND=Agg before it does), so a program that never imports it pays a dict lookup. Every
// entry is a JSON object {mime type: data} (binary as base64) or
// {"error": why}; the count and each entry's bytes are bounded here and again on the host.
#include "scheduler/driver/rich_outputs.h"

namespace lsb::sched {

const std::string& RichOutputSource() {
  static const std::string s = R"PY(
def _lsb_rich_install(max_entries, max_entry_bytes):
    # Imported now, before any user code: an import later would run through whatever the
    # program made of builtins.exec (importlib calls it), which is the program's business only.
    import base64, io, json, os, sys
    os.environ['MPLBACKEND'] = 'Agg'  # forced: a box has no display

    class Rich:
        def __init__(self):
            self.entries = []
            self.full = False

        def add(self, entry):
            if self.full:
                return
            if len(self.entries) >= max_entries:
                self.entries.append({'error': 'more than %d outputs; the rest are not returned' % max_entries})
                self.full = True
                return
            try:
                text = json.dumps(entry)
            except (TypeError, ValueError) as e:
                text = json.dumps({'error': 'an output is not JSON: %s' % e})
            if len(text) > max_entry_bytes:
                what = ', '.join(sorted(k for k in entry if '/' in k))
                text = json.dumps({'error': 'an output (%s) is %d bytes; the limit is %d' % (what, len(text), max_entry_bytes)})
            self.entries.append(text)

        def take(self):
            out, self.entries, self.full = self.entries, [], False
            return [e if isinstance(e, str) else json.dumps(e) for e in out]

        def figure(self, fig, label):
            try:
                buf = io.BytesIO()
                fig.savefig(buf, format='png')
                self.add({'image/png': base64.b64encode(buf.getvalue()).decode('ascii'), 'text/plain': repr(fig)})
            except Exception as e:
                self.add({'error': '%s could not be rendered: %s: %s' % (label, type(e).__name__, e)})

        def figures(self):
            # Every open figure, in number order, then closed (as Jupyter's inline backend does).
            plt = sys.modules.get('matplotlib.pyplot')
            if plt is None:
                return
            try:
                nums = plt.get_fignums()
            except Exception:
                return
            for n in nums:
                self.figure(plt.figure(n), 'figure %s' % n)
            plt.close('all')

        def display(self, value):
            # The value of a session's last expression, with its richest representations.
            if value is None:
                return
            entry = {}
            mpl = sys.modules.get('matplotlib.figure')
            if mpl is not None and isinstance(value, getattr(mpl, 'Figure', ())):
                plt = sys.modules.get('matplotlib.pyplot')
                number = getattr(value, 'number', None)
                if plt is not None and number is not None and number in plt.get_fignums():
                    return  # it is open: rendered with the other open figures, once
                self.figure(value, 'the figure')
                return
            for mime, method, binary in (('image/png', '_repr_png_', True), ('image/jpeg', '_repr_jpeg_', True),
                                         ('image/svg+xml', '_repr_svg_', False), ('text/html', '_repr_html_', False),
                                         ('text/markdown', '_repr_markdown_', False), ('text/latex', '_repr_latex_', False),
                                         ('application/json', '_repr_json_', False)):
                fn = getattr(type(value), method, None)
                if fn is None:
                    continue
                try:
                    data = fn(value)
                except Exception as e:
                    self.add({'error': '%s() raised %s: %s' % (method, type(e).__name__, e)})
                    continue
                if isinstance(data, tuple):  # (data, metadata)
                    data = data[0]
                if data is None:
                    continue
                if binary:
                    if isinstance(data, str):
                        data = data.encode('latin-1', 'replace')
                    data = base64.b64encode(bytes(data)).decode('ascii')
                elif mime != 'application/json' and not isinstance(data, str):
                    data = str(data)
                entry[mime] = data
            try:
                entry['text/plain'] = repr(value)
            except Exception as e:
                entry['text/plain'] = '<repr() raised %s>' % type(e).__name__
            self.add(entry)

    rich = Rich()

    def patch(pyplot):
        def show(*args, **kwargs):
            rich.figures()
        show.__doc__ = pyplot.show.__doc__
        pyplot.show = show

    class Finder:
        # Sees `import matplotlib.pyplot` go by, lets the other finders load it, then patches show.
        busy = False

        def find_spec(self, name, path, target=None):
            if name != 'matplotlib.pyplot' or Finder.busy:
                return None
            Finder.busy = True
            try:
                for f in sys.meta_path:
                    if f is self or not hasattr(f, 'find_spec'):
                        continue
                    spec = f.find_spec(name, path, target)
                    if spec is not None:
                        break
                else:
                    return None
            finally:
                Finder.busy = False
            loader = spec.loader
            if loader is None or not hasattr(loader, 'exec_module'):
                return spec
            run = loader.exec_module

            def exec_module(module):
                run(module)
                patch(module)
            loader.exec_module = exec_module
            return spec

    if 'matplotlib.pyplot' in sys.modules:
        patch(sys.modules['matplotlib.pyplot'])
    sys.meta_path.insert(0, Finder())
    return rich
)PY";
  return s;
}

namespace {

// A one-shot run's entries staged as files for the host, and the trailer line that counts them:
// part of the deferred source (entries exist only once the rich outputs were installed).
const std::string& OneShotStageSource() {
  static const std::string s = R"PY(
def _lsb_stage(stage, token, entries):
    import os, sys
    try:
        os.makedirs(stage, 0o700, exist_ok=True)
        for i, e in enumerate(entries):
            fd = os.open('%s/%04d.json' % (stage, i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                view = memoryview(e.encode('utf-8', 'surrogateescape'))
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        sys.stderr.flush()
        os.write(2, ('\x1e%s outputs %d\n' % (token, len(entries))).encode())
    except OSError as e:
        sys.stderr.flush()
        os.write(2, ('\x1e%s outputs 0 %s\n' % (token, e)).encode())
)PY";
  return s;
}

}  // namespace

const std::string& OneShotPreludeSource() {
  // argv: python3 [flags] -c PRELUDE STAGE TOKEN MAX_ENTRIES MAX_ENTRY_BYTES MAIN [args...]
  // RichOutputSource() and the staging go in as a string, compiled only once the program imports
  // matplotlib.pyplot (the one way a one-shot run makes outputs): their compile was ~1.5 ms of
  // every start, while a string literal costs the tokenizer one scan. They hold no ''' (the
  // RichOutputs unit tests check), so a raw triple-quoted literal carries them unchanged.
  static const std::string s = "_LSB_RICH = r'''" + RichOutputSource() + OneShotStageSource() + "'''\n" + R"PY(
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
)PY";
  return s;
}

}  // namespace lsb::sched

# Rich outputs, in-box half (scheduler/driver/rich_outputs.h): defines _lsb_rich_install, run in the
# program's own interpreter inside the box, by the session driver (at its first cell) and by the
# one-shot prelude (once the program imports matplotlib.pyplot). Must hold no ''' (the prelude
# carries it in a raw triple-quoted string; a unit test checks).
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

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

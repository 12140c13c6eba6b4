# Session fork, child side (scheduler/session/session_fork.cc): run as a cell in the child session's
# globals inside its box; loads what fork_export.py saved. The host replaces %PATH% with the state
# file's path as a Python string literal.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

def _lsb_fork_import(path, g):
    import importlib, json, os, pickle
    with open(path, 'rb') as f:
        st = pickle.load(f)
    os.unlink(path)
    failed = []
    for n in st['imported']:
        try:
            importlib.import_module(n)
        except BaseException:
            pass
    for k, name in st['modules'].items():
        try:
            g[k] = importlib.import_module(name)
        except BaseException:
            failed.append(k)
    for k, b in st['values'].items():
        try:
            g[k] = pickle.loads(b)
        except BaseException:
            failed.append(k)
    print('\x1elsb-fork ' + json.dumps({'failed': sorted(failed)}))
try:
    _lsb_fork_import(%PATH%, globals())
finally:
    del _lsb_fork_import

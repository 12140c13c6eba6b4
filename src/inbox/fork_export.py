# Session fork, parent side (scheduler/session/session_fork.cc): run as a cell in the parent
# session's globals inside its box; pickles the globals to a file. The host replaces %PATH% with the
# state file's path as a Python string literal.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

def _lsb_fork_export(path, g):
    import json, pickle, sys, types
    values, modules, skipped = {}, {}, []
    for k, v in list(g.items()):
        if k.startswith('__') or k == '_lsb_fork_export':
            continue
        if isinstance(v, types.ModuleType):
            modules[k] = v.__name__
            continue
        try:
            values[k] = pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            skipped.append(k)
    imported = sorted(n for n, m in list(sys.modules.items()) if m is not None and '.' not in n)
    with open(path, 'wb') as f:
        pickle.dump({'values': values, 'modules': modules, 'imported': imported}, f)
    print('\x1elsb-fork ' + json.dumps({'values': sorted(values), 'modules': sorted(modules),
                                         'skipped': sorted(skipped)}))
try:
    _lsb_fork_export(%PATH%, globals())
finally:
    del _lsb_fork_export

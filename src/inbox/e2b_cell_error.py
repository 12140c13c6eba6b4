# The last cell's exception as E2B's error line (server/e2b/interpreter_resource.cc): run as a helper
# by the session's interpreter inside the box; prints sys.last_* as JSON.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)
if 1:
    def _lsb_err():
        import json, sys, traceback
        t = sys.__dict__.get('last_type')
        if t is None:
            return ''
        v, tb = sys.__dict__.get('last_value'), sys.__dict__.get('last_traceback')
        return json.dumps({'name': t.__name__, 'value': str(v), 'traceback': ''.join(traceback.format_exception(t, v, tb))})
    __import__('sys').stdout.write(_lsb_err())
    del _lsb_err

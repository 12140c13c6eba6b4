# E2B environment variables in the sandbox's persistent interpreter (server/e2b/command_cell.h
# EnvCellSource): run as a cell; sets each name of ARGS's "env" in os.environ (null: removes it),
# and with "report" first prints the values they had, as JSON, for the restore. The host replaces
# ARGS with base64 of the JSON arguments; `_lsb_env` is removed again.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)
if 1:
    def _lsb_env(args):
        import base64, json, os, sys
        a = json.loads(base64.b64decode(args))
        if a['report']:
            sys.stdout.write(json.dumps({k: os.environ.get(k) for k in a['env']}))
        for k, v in a['env'].items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _lsb_env('ARGS')
    del _lsb_env

# envd's filesystem calls (server/e2b/fs_ops.h): run by the session's interpreter inside the box, in
# a fresh globals dict holding MARKER, OP, PATH, DEPTH, LIMIT (server/e2b/fs_ops.cc sends it base64'd).
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)

import os, stat, json, pwd, grp, datetime
def entry(p):
    st = os.lstat(p)
    m = st.st_mode
    t = 'FILE_TYPE_DIRECTORY' if stat.S_ISDIR(m) else 'FILE_TYPE_SYMLINK' if stat.S_ISLNK(m) else 'FILE_TYPE_FILE' if stat.S_ISREG(m) else 'FILE_TYPE_UNSPECIFIED'
    try: owner = pwd.getpwuid(st.st_uid).pw_name
    except Exception: owner = str(st.st_uid)
    try: group = grp.getgrgid(st.st_gid).gr_name
    except Exception: group = str(st.st_gid)
    e = {'name': os.path.basename(p) or p, 'type': t, 'path': p, 'size': str(st.st_size), 'mode': stat.S_IMODE(m),
         'permissions': stat.filemode(m), 'owner': owner, 'group': group,
         'modifiedTime': datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}
    if stat.S_ISLNK(m): e['symlinkTarget'] = os.readlink(p)
    return e
def run(op, path, depth, limit):
    if op == 'list':
        if not stat.S_ISDIR(os.lstat(path).st_mode): return ('invalid_argument', path + ' is not a directory')
        out = []
        def walk(d, level):
            for name in sorted(os.listdir(d)):
                p = os.path.join(d, name)
                out.append(entry(p))
                if len(out) > limit: raise OverflowError
                if level < depth and out[-1]['type'] == 'FILE_TYPE_DIRECTORY': walk(p, level + 1)
        try: walk(path, 1)
        except OverflowError: return ('resource_exhausted', path + ' has more than %d entries at this depth' % limit)
        return {'entries': out}
    if op == 'stat': return {'entry': entry(path)}
    if op == 'mkdir':
        if os.path.lexists(path): return ('already_exists', path + ' already exists')
        os.makedirs(path)
        return {'entry': entry(path)}
    if op == 'remove':
        if stat.S_ISDIR(os.lstat(path).st_mode):
            import shutil
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return {}
def answer(op, path, depth, limit):
    try:
        r = run(op, path, depth, limit)
        return {'error': {'code': r[0], 'message': r[1]}} if isinstance(r, tuple) else {'ok': r}
    except FileNotFoundError: return {'error': {'code': 'not_found', 'message': path + ' does not exist in the sandbox'}}
    except PermissionError as e: return {'error': {'code': 'permission_denied', 'message': path + ': ' + (e.strerror or 'permission denied') + ' (outside the policy\'s writable dirs, or read-only)'}}
    except NotADirectoryError: return {'error': {'code': 'invalid_argument', 'message': 'a component of ' + path + ' is not a directory'}}
    except OSError as e: return {'error': {'code': 'internal', 'message': path + ': ' + (e.strerror or str(e))}}
import sys
sys.stdout.write(MARKER + json.dumps(answer(OP, PATH, DEPTH, LIMIT)) + '\n')
sys.stdout.flush()

#include "server/e2b/fs_ops.h"

#include "base/base64.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

// Runs in a fresh globals dict (the session's own variables are neither read nor changed).
const char* kFsSource = R"PY(
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
)PY";

const char* OpName(FsOp op) {
  switch (op) {
    case FsOp::kList: return "list";
    case FsOp::kStat: return "stat";
    case FsOp::kMakeDir: return "mkdir";
    case FsOp::kRemove: return "remove";
  }
  return "stat";
}

RpcCode CodeOf(const std::string& name) {
  for (RpcCode c : {RpcCode::kInvalidArgument, RpcCode::kNotFound, RpcCode::kAlreadyExists, RpcCode::kPermissionDenied,
                    RpcCode::kResourceExhausted})
    if (name == RpcCodeName(c)) return c;
  return RpcCode::kInternal;
}

}  // namespace

std::string FsOpCode(FsOp op, const std::string& path, unsigned depth, const std::string& marker) {
  // The arguments travel as JSON inside base64: no quoting of a hostile path can reach Python.
  json args = {{"MARKER", marker}, {"OP", OpName(op)}, {"PATH", path}, {"DEPTH", depth}, {"LIMIT", kMaxListEntries}};
  return "exec(__import__('base64').b64decode('" + Base64Encode(kFsSource) +
         "').decode(), dict(__import__('json').loads(__import__('base64').b64decode('" + Base64Encode(args.dump()) +
         "').decode()), __builtins__=__builtins__))\n";
}

FsAnswer ParseFsAnswer(const std::string& out, const std::string& marker) {
  FsAnswer a;
  size_t at = out.rfind(marker);
  if (at == std::string::npos) {
    a.error = {RpcCode::kInternal, "the sandbox's interpreter gave no answer (it may have been restarted or its stdout replaced)"};
    return a;
  }
  size_t end = out.find('\n', at);
  json j = json::parse(out.substr(at + marker.size(), end == std::string::npos ? std::string::npos : end - at - marker.size()),
                       nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    a.error = {RpcCode::kInternal, "the sandbox's answer was not readable"};
    return a;
  }
  if (j.contains("ok")) {
    a.ok = true;
    a.message = j["ok"];
    return a;
  }
  // What the box wrote is not trusted to be well-formed: only strings are taken from it.
  json e = j.contains("error") && j["error"].is_object() ? j["error"] : json::object();
  std::string code = e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>() : "";
  std::string message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                          : "the operation failed";
  a.error = {CodeOf(code), message};
  return a;
}

}  // namespace lsb::server::e2b

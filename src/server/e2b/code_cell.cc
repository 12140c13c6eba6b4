#include "server/e2b/code_cell.h"

#include "base/base64.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

// Exec'd in a fresh dict that holds G (the session's globals), CODE and MARKER.
const char* kCellSource = R"PY(
import ast, sys, json, base64, io, os, traceback
os.environ.setdefault('MPLBACKEND', 'Agg')
report = {'results': [], 'error': None}
def formats(v):
    r = {'text': repr(v)}
    for key, meth in (('html', '_repr_html_'), ('markdown', '_repr_markdown_'), ('svg', '_repr_svg_'), ('latex', '_repr_latex_'), ('json', '_repr_json_'), ('javascript', '_repr_javascript_')):
        f = getattr(v, meth, None)
        if callable(f):
            try:
                x = f()
                if x is not None: r[key] = x
            except Exception: pass
    for key, meth in (('png', '_repr_png_'), ('jpeg', '_repr_jpeg_')):
        f = getattr(v, meth, None)
        if callable(f):
            try:
                x = f()
                if isinstance(x, bytes): r[key] = base64.b64encode(x).decode()
                elif isinstance(x, str): r[key] = x
            except Exception: pass
    return r
value = None
has_value = False
try:
    tree = ast.parse(CODE, '<cell>', 'exec')
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None: tree.body = tree.body[:-1]
    exec(compile(tree, '<cell>', 'exec'), G)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), '<cell>', 'eval'), G)
        has_value = value is not None
except BaseException as e:
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != '<cell>': tb = tb.tb_next
    report['error'] = {'name': type(e).__name__, 'value': str(e), 'traceback': ''.join(traceback.format_exception(type(e), e, tb))}
plt = sys.modules.get('matplotlib.pyplot')
if plt is not None:
    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format='png')
            report['results'].append({'text': repr(fig), 'png': base64.b64encode(buf.getvalue()).decode(), 'is_main_result': False})
        except Exception: pass
    plt.close('all')
if has_value:
    r = formats(value)
    r['is_main_result'] = True
    report['results'].append(r)
try: sys.stdout.flush()
except Exception: pass
sys.stdout.write(MARKER + json.dumps(report) + '\n')
sys.stdout.flush()
)PY";

}  // namespace

std::string CodeCellSource(const std::string& code, const std::string& marker) {
  return "exec(__import__('base64').b64decode('" + Base64Encode(kCellSource) +
         "').decode(), {'__builtins__': __builtins__, 'G': globals(), 'MARKER': __import__('base64').b64decode('" +
         Base64Encode(marker) + "').decode(), 'CODE': __import__('base64').b64decode('" + Base64Encode(code) +
         "').decode('utf-8', 'replace')})\n";
}

CellReport ParseCellReport(const std::string& out, const std::string& marker) {
  CellReport r;
  r.results = json::array();
  size_t at = out.rfind(marker);
  if (at == std::string::npos) {
    r.stdout_data = out;
    return r;
  }
  size_t end = out.find('\n', at);
  json j = json::parse(out.substr(at + marker.size(), end == std::string::npos ? std::string::npos : end - at - marker.size()),
                       nullptr, false);
  r.stdout_data = out.substr(0, at) + (end == std::string::npos ? "" : out.substr(end + 1));
  if (j.is_discarded() || !j.is_object()) return r;
  r.reported = true;
  // Written by the box: only well-formed entries are taken.
  if (j.contains("results") && j["results"].is_array())
    for (const auto& x : j["results"])
      if (x.is_object()) r.results.push_back(x);
  if (j.contains("error") && j["error"].is_object()) r.error = j["error"];
  return r;
}

}  // namespace lsb::server::e2b

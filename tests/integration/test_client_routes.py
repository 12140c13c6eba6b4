"""Every route the daemon registers has a method in both clients (issue 37).

The route table is read from the source: each `router.Add("METHOD", "/pattern", ...)` call in
src/server/*.cc, and the one table-driven registration (the file-system routes, a list of
"METHOD /suffix" strings under a literal prefix). The E2B door (src/server/e2b) is left out: it is
served for the E2B SDKs, not for our clients. Each (method, pattern) must be in ROUTES, naming the
Python methods (checked with getattr on the sync and the asyncio classes) and the TypeScript ones
(checked in the class bodies of clients/js/src), or in NOT_CLIENT_METHODS with the reason. A new
route with neither fails, naming the route and what to add. Pure Python: no daemon, no build.
"""
import glob
import os
import re
import sys
import unittest

SOURCE_DIR = os.environ.get("LSB_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "clients", "python"))

from llm_sandbox import AsyncSandboxClient, AsyncSession, SandboxClient, Session  # noqa: E402

# (method, pattern) -> Python methods and TypeScript methods, as "Class.method". A Python entry
# names the sync class; its asyncio twin (AsyncSandboxClient / AsyncSession) must have it too.
ROUTES = {
    ("POST", "/v1/execute"): (["SandboxClient.execute", "SandboxClient.submit", "SandboxClient.stream",
                               "SandboxClient.execute_async"],
                              ["SandboxClient.execute", "SandboxClient.submit", "SandboxClient.stream",
                               "SandboxClient.executeAsync"]),
    ("POST", "/v1/batch"): (["SandboxClient.batch", "SandboxClient.submit_batch"],
                            ["SandboxClient.batch", "SandboxClient.submitBatch"]),
    ("GET", "/healthz"): (["SandboxClient.health"], ["SandboxClient.health"]),
    ("GET", "/readyz"): (["SandboxClient.ready"], ["SandboxClient.ready"]),
    ("GET", "/v1/images"): (["SandboxClient.images"], ["SandboxClient.images"]),
    ("GET", "/v1/policies"): (["SandboxClient.policies"], ["SandboxClient.policies"]),
    ("GET", "/v1/policies/{name}"): (["SandboxClient.get_policy"], ["SandboxClient.getPolicy"]),
    ("GET", "/v1/events"): (["SandboxClient.events"], ["SandboxClient.events"]),
    ("GET", "/v1/executions"): (["SandboxClient.list_executions"], ["SandboxClient.listExecutions"]),
    ("GET", "/v1/executions/{id}"): (["SandboxClient.get_execution", "SandboxClient.execution"],
                                     ["SandboxClient.getExecution", "SandboxClient.execution"]),
    ("GET", "/v1/history"): (["SandboxClient.history"], ["SandboxClient.history"]),
    ("GET", "/v1/overview"): (["SandboxClient.overview"], ["SandboxClient.overview"]),
    ("POST", "/v1/sessions"): (["SandboxClient.session"], ["SandboxClient.session"]),
    ("GET", "/v1/sessions"): (["SandboxClient.list_sessions"], ["SandboxClient.listSessions"]),
    ("GET", "/v1/sessions/{id}"): (["Session.info", "SandboxClient.attach_session"],
                                   ["Session.info", "SandboxClient.attachSession"]),
    ("DELETE", "/v1/sessions/{id}"): (["Session.close"], ["Session.close"]),
    ("POST", "/v1/sessions/{id}/execute"): (["Session.execute"], ["Session.execute"]),
    ("PUT", "/v1/sessions/{id}/files"): (["Session.upload"], ["Session.upload"]),
    ("GET", "/v1/sessions/{id}/files"): (["Session.download"], ["Session.download"]),
    ("PUT", "/v1/sessions/{id}/archive"): (["Session.upload_archive", "Session.upload_dir"],
                                           ["Session.uploadArchive", "Session.uploadDir"]),
    ("GET", "/v1/sessions/{id}/archive"): (["Session.download_dir"], ["Session.downloadDir"]),
    ("GET", "/v1/sessions/{id}/changes"): (["Session.changes"], ["Session.changes"]),
    ("POST", "/v1/sessions/{id}/reset"): (["Session.reset"], ["Session.reset"]),
    ("POST", "/v1/sessions/{id}/snapshot"): (["Session.snapshot"], ["Session.snapshot"]),
    ("POST", "/v1/sessions/{id}/fork"): (["Session.fork"], ["Session.fork"]),
    ("POST", "/v1/sessions/{id}/pause"): (["Session.pause"], ["Session.pause"]),
    ("POST", "/v1/sessions/{id}/resume"): (["Session.resume", "SandboxClient.resume_session"],
                                           ["Session.resume", "SandboxClient.resumeSession"]),
    ("GET", "/v1/sessions/{id}/fs/list"): (["Session.list_dir"], ["Session.listDir"]),
    ("GET", "/v1/sessions/{id}/fs/stat"): (["Session.stat"], ["Session.stat"]),
    ("POST", "/v1/sessions/{id}/fs/mkdir"): (["Session.mkdir"], ["Session.mkdir"]),
    ("POST", "/v1/sessions/{id}/fs/rename"): (["Session.rename"], ["Session.rename"]),
    ("POST", "/v1/sessions/{id}/fs/remove"): (["Session.remove"], ["Session.remove"]),
    ("GET", "/v1/sessions/{id}/fs/watch"): (["Session.watch"], ["Session.watch"]),
}

# Routes that are deliberately not client methods, with the reason.
NOT_CLIENT_METHODS = {
    # Prometheus' text format, scraped by Prometheus (docs/monitoring), not read by agents.
    ("GET", "/metrics"): "Prometheus scrape endpoint",
    # The dashboard's HTML page, for a browser.
    ("GET", "/"): "the dashboard page",
    # The MCP door (Streamable HTTP): MCP clients and agent frameworks speak it with their own SDKs.
    ("POST", "/mcp"): "MCP protocol, spoken by MCP SDKs",
    ("DELETE", "/mcp"): "MCP protocol, spoken by MCP SDKs",
}

ASYNC_TWIN = {"SandboxClient": AsyncSandboxClient, "Session": AsyncSession}
SYNC = {"SandboxClient": SandboxClient, "Session": Session}
TS_FILES = {"SandboxClient": "client.ts", "Session": "session.ts"}

LITERAL_ADD = re.compile(r'\b\w+\.Add\(\s*"([A-Z]+)"\s*,\s*"([^"]+)"')
ANY_ROUTER_ADD = re.compile(r'\brouter\.Add\(')
TABLE_ENTRY = re.compile(r'\{\s*"([A-Z]+) (/[^"]*)"\s*,\s*\w+\s*\}')
TABLE_PREFIX = re.compile(r'router\.Add\(\s*\w+\.substr\(0, \w+\)\s*,\s*"([^"]+)"\s*\+')


def read(path):
    with open(path) as f:
        return f.read()


def registered_routes():
    """{(method, pattern): "file:line"} of every route src/server registers (E2B left out), and
    the Add calls this parser cannot read (each must fail the test rather than be skipped)."""
    routes, unread = {}, []
    for path in sorted(glob.glob(os.path.join(SOURCE_DIR, "src", "server", "*.cc"))):
        text = read(path)
        name = os.path.relpath(path, SOURCE_DIR)
        line_of = lambda pos: f"{name}:{text.count(chr(10), 0, pos) + 1}"  # noqa: E731
        for m in LITERAL_ADD.finditer(text):
            routes[(m.group(1), m.group(2))] = line_of(m.start())
        literal_at = {m.start() for m in LITERAL_ADD.finditer(text)}
        for m in ANY_ROUTER_ADD.finditer(text):
            if m.start() in literal_at:
                continue
            prefix = TABLE_PREFIX.match(text, m.start())
            entries = TABLE_ENTRY.findall(text)
            if prefix and entries:  # AddSessionFsRoutes: "GET /fs/list" under "/v1/sessions/{id}"
                for method, suffix in entries:
                    routes[(method, prefix.group(1) + suffix)] = line_of(m.start())
            else:
                unread.append(line_of(m.start()))
    return routes, unread


def ts_methods(cls):
    """The method names declared in the TypeScript class `cls` (its file's class body)."""
    text = read(os.path.join(SOURCE_DIR, "clients", "js", "src", TS_FILES[cls]))
    body = text[text.index(f"export class {cls} "):]
    body = body[:body.index("\n}\n")]
    return set(re.findall(r"^  (?:async \*?|\*)?(\w+)(?:<[^>]*>)?\(", body, re.M))


class ClientRoutesTest(unittest.TestCase):
    def setUp(self):
        self.routes, self.unread = registered_routes()

    def test_the_parser_reads_every_registration(self):
        self.assertEqual(self.unread, [], "router.Add calls this test cannot read; register with literal "
                                          "(method, pattern) strings or teach registered_routes() the new form")
        self.assertGreater(len(self.routes), 30, f"too few routes parsed, the parser is broken: {self.routes}")

    def test_every_route_has_a_method_in_both_clients(self):
        missing = []
        for route, where in sorted(self.routes.items()):
            if route in NOT_CLIENT_METHODS:
                continue
            if route not in ROUTES:
                missing.append(f"{route[0]} {route[1]} ({where}): add a method to the Python client "
                               "(SandboxClient/Session and their asyncio twins) and to the TypeScript one "
                               "(clients/js/src), then map it in ROUTES of this test; or, if no client should "
                               "call it, list it in NOT_CLIENT_METHODS with the reason")
        self.assertEqual(missing, [], "\n" + "\n".join(missing))

    def test_the_mapped_python_methods_exist_sync_and_asyncio(self):
        absent = []
        for route, (py, _) in sorted(ROUTES.items()):
            for dotted in py:
                cls, meth = dotted.split(".")
                for klass in (SYNC[cls], ASYNC_TWIN[cls]):
                    if not callable(getattr(klass, meth, None)):
                        absent.append(f"{route[0]} {route[1]}: {klass.__name__}.{meth} does not exist")
        self.assertEqual(absent, [], "\n" + "\n".join(absent))

    def test_the_mapped_typescript_methods_exist(self):
        declared = {cls: ts_methods(cls) for cls in TS_FILES}
        absent = [f"{route[0]} {route[1]}: {dotted} is not declared in clients/js/src/{TS_FILES[dotted.split('.')[0]]}"
                  for route, (_, ts) in sorted(ROUTES.items()) for dotted in ts
                  if dotted.split(".")[1] not in declared[dotted.split(".")[0]]]
        self.assertEqual(absent, [], "\n" + "\n".join(absent))

    def test_no_mapping_names_a_route_that_is_gone(self):
        stale = sorted(set(ROUTES) | set(NOT_CLIENT_METHODS))
        stale = [f"{m} {p}" for m, p in stale if (m, p) not in self.routes]
        self.assertEqual(stale, [], "mapped in this test but no longer registered in src/server: remove them")


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""docs/api.md's route table against the router (issue 37): every route src/server/*_resource.cc
registers with Router::Add is a row of the table, every row is a registered route, and every row's
section link names a heading of docs/api.md. Needs no build: it reads the sources."""
import os
import re
import unittest

ROOT = os.environ.get("LSB_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
API = os.path.join(ROOT, "docs", "api.md")
SERVER = os.path.join(ROOT, "src", "server")


def registered_routes():
    """(method, path) of every router.Add in src/server/*_resource.cc (not the E2B door's routers)."""
    routes = set()
    for name in sorted(os.listdir(SERVER)):
        if not name.endswith("_resource.cc"):
            continue
        src = open(os.path.join(SERVER, name), encoding="utf-8").read()
        for m in re.finditer(r'router\.Add\(\s*"([A-Z]+)",\s*"([^"]+)"', src):
            routes.add((m.group(1), m.group(2)))
        # session_fs_resource.cc builds its paths: {"GET /fs/list", List} + "/v1/sessions/{id}" + suffix.
        prefix = re.search(r'router\.Add\(.*?,\s*"(/[^"]+)"\s*\+', src)
        if prefix:
            for m in re.finditer(r'\{"([A-Z]+) (/[^"]+)",\s*\w+\}', src):
                routes.add((m.group(1), prefix.group(1) + m.group(2)))
    return routes


def table_rows():
    """(method, path, anchor) of each row of the table under '## Routes'."""
    text = open(API, encoding="utf-8").read()
    section = text.split("\n## Routes\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r'\|\s*`([A-Z]+)`\s*\|\s*`([^`]+)`\s*\|[^|]*\|\s*\[[^\]]+\]\(#([^)]+)\)\s*\|$', line)
        if m:
            rows.append(m.groups())
    return rows


def anchors():
    """GitHub's anchor of each heading of docs/api.md."""
    out = set()
    for line in open(API, encoding="utf-8"):
        m = re.match(r'#+ (.*)', line)
        if m:
            a = re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-')
            out.add(a)
    return out


class ApiRouteTable(unittest.TestCase):
    def test_the_router_is_read(self):
        routes = registered_routes()
        # A parser that finds nothing would make the next tests pass vacuously.
        self.assertIn(("POST", "/v1/execute"), routes)
        self.assertIn(("GET", "/v1/sessions/{id}/fs/list"), routes)
        self.assertGreaterEqual(len(routes), 30)

    def test_every_route_is_in_the_table_and_nothing_else(self):
        documented = {(m, p) for m, p, _ in table_rows()}
        routes = registered_routes()
        self.assertEqual(sorted(routes - documented), [], "routes missing from docs/api.md's table")
        self.assertEqual(sorted(documented - routes), [], "rows of docs/api.md's table the router does not have")

    def test_each_row_once(self):
        rows = [(m, p) for m, p, _ in table_rows()]
        self.assertEqual(len(rows), len(set(rows)))

    def test_every_link_names_a_heading(self):
        heads = anchors()
        for method, path, anchor in table_rows():
            self.assertIn(anchor, heads, f"{method} {path}: #{anchor} is no heading of docs/api.md")


if __name__ == "__main__":
    unittest.main()

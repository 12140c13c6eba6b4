"""Rich outputs (docs/api.md "Rich outputs") through the real `llm-sandbox serve`: matplotlib
figures of one-shot and batch Python programs as PNG entries in `outputs` (decoded here: the PNG
signature, IHDR, every chunk's CRC, the IDAT stream inflated to the size IHDR implies), nothing
imported that the program did not import, a session's last expression with its richest
representations, bounds and error entries, and a program that attacks its own staging.
CTest runs it on native (integration_daemon), where the box runs the host's python with
python3-matplotlib; on Docker (LLM_SANDBOX_BACKEND=docker) the figure tests need an image with
matplotlib and are skipped when the box has none."""
import base64
import os
import shutil
import struct
import tempfile
import unittest
import zlib

from daemon_harness import Daemon, OpenApi, request, skip_unless_daemon_suite
from harness import python_policy

POLICY = python_policy("outputs-test", 180)

CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # PNG colour type -> samples per pixel


def decode_png(data):
    """(width, height, raw scanlines) of a PNG, checking its structure; raises on any defect."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    at, chunks = 8, []
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        (crc,) = struct.unpack(">I", data[at + 8 + n:at + 12 + n])
        assert zlib.crc32(kind + body) & 0xffffffff == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        at += 12 + n
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    w, h, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    assert depth == 8 and len(raw) == h * (1 + w * CHANNELS[colour]), "IDAT does not hold IHDR's image"
    return w, h, raw


def pngs(result):
    return [base64.b64decode(o["image/png"]) for o in result.get("outputs", []) if "image/png" in o]


class OutputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        cls.api = OpenApi()
        cls.dir = tempfile.mkdtemp(prefix="lsb-outputs-")
        with open(os.path.join(cls.dir, "outputs-test.yaml"), "w") as f:
            f.write(POLICY)
        cls.d = Daemon("--max-concurrency", "2", policies=cls.dir)
        cls.addClassCleanup(cls.d.close)
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        probe = cls.run_code(cls, "import importlib.util; print(importlib.util.find_spec('matplotlib') is not None)")
        cls.has_mpl = probe.get("stdout") == "True\n"

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def need_mpl(self):
        if not self.has_mpl:
            self.skipTest("the box's python has no matplotlib (a Docker image without it)")

    def call(self, method, path, template, body):
        r = request(self.d.base, method, path, body=body, timeout=600)
        if r.headers.get("Content-Type", "").startswith("application/json") and r.body:
            self.api.check(method, template, r.status, r.json())
        return r

    def run_code(self, code, **extra):
        r = request(self.d.base, "POST", "/v1/execute",
                    body={"code": code, "language": "python", "policy": "outputs-test", **extra}, timeout=600)
        assert r.status == 200, r.body[:3000]
        self.api.check("POST", "/v1/execute", r.status, r.json())
        return r.json()

    def session(self):
        r = self.call("POST", "/v1/sessions", "/v1/sessions", {"language": "python", "policy": "outputs-test"})
        self.assertEqual(r.status, 201, r.body)
        sid = r.json()["session_id"]
        self.addCleanup(lambda: request(self.d.base, "DELETE", f"/v1/sessions/{sid}"))
        return sid

    def cell(self, sid, code, **extra):
        r = self.call("POST", f"/v1/sessions/{sid}/execute", "/v1/sessions/{id}/execute", {"code": code, **extra})
        self.assertEqual(r.status, 200, r.body[:3000])
        return r.json()

    # ---- one-shot

    def test_shown_and_open_figures_come_back_as_pngs(self):
        self.need_mpl()
        res = self.run_code(
            "import matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [3, 1, 2]); plt.title('shown')\n"
            "plt.show()\n"
            "plt.figure(figsize=(3, 2)); plt.bar([1, 2], [3, 4])  # left open\n"
            "print(plt.get_backend())\n")
        self.assertEqual(res["status"], "ok", res)
        self.assertEqual(res["stdout"], "agg\n")
        self.assertNotIn("LSB-OUT", res["stderr"])  # the trailer is the host's, not the caller's
        self.assertNotIn("\x1e", res["stderr"])
        figs = pngs(res)
        self.assertEqual(len(figs), 2, res.get("outputs"))
        sizes = [decode_png(p)[:2] for p in figs]
        self.assertEqual(sizes, [(640, 480), (300, 200)])
        self.assertTrue(res["outputs"][0]["text/plain"].startswith("<Figure size 640x480"))

    def test_nothing_is_imported_that_the_program_did_not_import(self):
        res = self.run_code("import sys\nprint(sorted(m for m in sys.modules if m.startswith(('matplotlib', 'numpy'))))")
        self.assertEqual(res["stdout"], "[]\n", res)
        self.assertNotIn("outputs", res)

    def test_the_program_runs_as_main_with_its_own_file_argv_and_traceback(self):
        res = self.run_code(
            "import sys, pickle\n"
            "class C: pass\n"
            "pickle.dumps(C())  # classes of __main__ pickle\n"
            "print(__name__, __file__, sys.argv[0] == __file__, 'rich' in ' '.join(dir()))\n"
            "def f():\n    raise ValueError('boom')\n"
            "f()\n")
        self.assertEqual(res["exit_code"], 1, res)
        self.assertEqual(res["stdout"], "__main__ /run/job/main.py True False\n")
        self.assertIn('main.py", line 7, in <module>', res["stderr"])
        self.assertIn("ValueError: boom", res["stderr"])
        self.assertNotIn("_lsb", res["stderr"])  # no frame of the prelude
        self.assertEqual(self.run_code("import sys; sys.exit(3)")["exit_code"], 3)

    def test_outputs_false_returns_none(self):
        self.need_mpl()
        res = self.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\n", outputs=False)
        self.assertEqual(res["status"], "ok", res)
        self.assertNotIn("outputs", res)
        r = request(self.d.base, "POST", "/v1/execute", body={"code": "1", "outputs": "yes"})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("outputs", r.json()["error"]["message"])

    def test_count_is_bounded_and_a_figure_that_fails_is_an_error_entry(self):
        self.need_mpl()
        res = self.run_code(
            "import matplotlib.pyplot as plt\n"
            "plt.figure(); plt.title(r'$\\frac{$')  # mathtext that cannot be rendered\n"
            "for i in range(20):\n    plt.figure(figsize=(1, 1))\n")
        self.assertEqual(res["status"], "ok", res)
        out = res["outputs"]
        self.assertEqual(len(out), 17, [list(o) for o in out])  # 16 entries, then the bound's error
        self.assertIn("could not be rendered", out[0]["error"])
        self.assertEqual(len(pngs(res)), 15)
        self.assertIn("more than 16 outputs", out[-1]["error"])

    def test_a_program_that_forges_its_staged_entries_gets_error_entries(self):
        # The program knows its stage (argv of its interpreter) and writes hostile entries itself.
        res = self.run_code(
            "import os, sys\n"
            "args = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
            "stage = args[args.index(b'-c') + 2].decode()\n"
            "os.makedirs(stage)\n"
            "open(stage + '/0000.json', 'w').write('{not json')\n"
            "open(stage + '/0001.json', 'w').write('{\"../../etc\": \"x\"}')\n"
            "open(stage + '/0002.json', 'w').write('{\"image/png\": 5}')\n"
            "os.symlink('/etc/passwd', stage + '/0003.json')\n"
            "open(stage + '/0004.json', 'w').write('{\"text/plain\": \"' + 'x' * (5 << 20) + '\"}')\n"
            "token = args[args.index(b'-c') + 3].decode()\n"
            "sys.stderr.write('\\x1e%s outputs 5\\n' % token)\n")
        self.assertEqual(res["status"], "ok", res)
        errors = [o.get("error", "") for o in res["outputs"]]
        self.assertEqual(len(errors), 5, res["outputs"])
        self.assertTrue(all(errors), res["outputs"])
        self.assertNotIn("root:", str(res["outputs"]))  # /etc/passwd was not read through the link
        self.assertTrue(any("not a MIME type" in e for e in errors), errors)
        self.assertTrue(any("limit" in e for e in errors), errors)

    # ---- batch: the must-show case

    def test_ten_sub_agents_each_plot_their_csv_slice(self):
        self.need_mpl()
        rows = [f"{i},{(i * 37) % 101}" for i in range(200)]
        tasks = []
        for k in range(10):
            part = "x,y\n" + "\n".join(rows[k * 20:(k + 1) * 20]) + "\n"
            tasks.append({
                "policy": "outputs-test", "language": "python",
                "files": [{"path": "/tmp/slice.csv", "content": part}],
                "code": ("import csv\nimport matplotlib.pyplot as plt\n"
                         "rows = list(csv.DictReader(open('/tmp/slice.csv')))\n"
                         "xs = [int(r['x']) for r in rows]; ys = [int(r['y']) for r in rows]\n"
                         f"plt.figure(figsize=(4, 3)); plt.plot(xs, ys); plt.title('agent {k}')\n"
                         "plt.show()\nprint(len(rows), sum(ys))\n"),
            })
        r = self.call("POST", "/v1/batch", "/v1/batch", {"tasks": tasks})
        self.assertEqual(r.status, 200, r.body[:3000])
        results = r.json()["results"]
        self.assertEqual(len(results), 10)
        images = []
        for k, res in enumerate(results):
            self.assertEqual(res["status"], "ok", res)
            ys = [(i * 37) % 101 for i in range(k * 20, (k + 1) * 20)]
            self.assertEqual(res["stdout"], f"20 {sum(ys)}\n")
            figs = pngs(res)
            self.assertEqual(len(figs), 1, res.get("outputs"))
            w, h, raw = decode_png(figs[0])
            self.assertEqual((w, h), (400, 300))
            images.append(raw)
        self.assertEqual(len(set(images)), 10, "every sub-agent's plot differs")

    # ---- sessions

    def test_session_last_expression_with_its_richest_representations(self):
        sid = self.session()
        res = self.cell(sid, "x = 41\nx + 1")
        self.assertEqual(res["outputs"], [{"text/plain": "42"}])
        self.assertEqual(res["stdout"], "")
        res = self.cell(sid, "class H:\n"
                             "    def _repr_html_(self): return '<b>h</b>'\n"
                             "    def _repr_json_(self): return {'a': [1, 2]}\n"
                             "    def _repr_png_(self): return b'\\x89PNG-ish'\n"
                             "    def __repr__(self): return 'H()'\n"
                             "H()")
        self.assertEqual(res["outputs"], [{"text/html": "<b>h</b>", "application/json": {"a": [1, 2]},
                                           "image/png": base64.b64encode(b"\x89PNG-ish").decode(),
                                           "text/plain": "H()"}])
        res = self.cell(sid, "print('side effect only')\nx = 3")
        self.assertNotIn("outputs", res)
        res = self.cell(sid, "class Bad:\n    def _repr_html_(self): raise RuntimeError('no')\nBad()")
        self.assertIn("_repr_html_() raised RuntimeError: no", res["outputs"][0]["error"])
        self.assertIn("text/plain", res["outputs"][1])
        res = self.cell(sid, "x + 1", outputs=False)
        self.assertNotIn("outputs", res)
        res = self.cell(sid, "1/0")
        self.assertEqual(res["exit_code"], 1)
        self.assertIn('File "<session>", line 1', res["stderr"])
        self.assertNotIn("lsb_driver", res["stderr"])  # no frame of the driver
        self.assertNotIn("outputs", res)

    def test_session_figures_shown_or_left_open_once_each(self):
        self.need_mpl()
        sid = self.session()
        res = self.cell(sid, "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()\n"
                             "fig = plt.figure(figsize=(2, 2)); plt.plot([2, 1])\nfig")
        figs = pngs(res)
        self.assertEqual([decode_png(p)[:2] for p in figs], [(640, 480), (200, 200)], res.get("outputs"))
        res = self.cell(sid, "len(plt.get_fignums())")  # figures are closed after each execution
        self.assertEqual(res["outputs"], [{"text/plain": "0"}])


if __name__ == "__main__":
    unittest.main()

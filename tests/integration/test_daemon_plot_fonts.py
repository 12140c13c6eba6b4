"""Plotting is not an attack (issue 37, item 1), over raw HTTP against the real daemon with the
shipped policies (the default policy, code-sandbox): ten sub-agents that each import pyplot and save
a figure raise no alert (matplotlib no longer executes fc-list: the daemon's font list, built once
from the host's fonts, is in each box at $MPLCONFIGDIR), nor rebuild the list; the list is
read-only in the box and a box that tries to change it changes nothing another box reads.
The time against bare pythons is bench/plot_agents's."""
import os
import unittest

from daemon_harness import Daemon, request, skip_unless_daemon_suite

PLOT = ("import os, time\nt = time.monotonic()\nimport matplotlib.pyplot as plt\n"
        "print('import', time.monotonic() - t)\nplt.plot([1, 2, 3], [1, 4, 9])\n"
        "plt.savefig('/tmp/fig.png')\nplt.close('all')\nprint('saved', os.path.getsize('/tmp/fig.png'))\n"
        "print('configdir', os.environ.get('MPLCONFIGDIR'))\n")


def has_matplotlib():
    return os.path.isdir("/usr/lib/python3/dist-packages/matplotlib")


class PlotFontsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        if not has_matplotlib():
            raise unittest.SkipTest("the host's python3 has no matplotlib (apt-get install python3-matplotlib)")
        cls.d = Daemon()
        cls.addClassCleanup(cls.d.close)

    def batch(self, code, n):
        r = request(self.d.base, "POST", "/v1/batch", {"tasks": [{"code": code}] * n, "concurrency": n})
        self.assertEqual(r.status, 200, r.body[:2000])
        return r.json()["results"]

    def test_ten_plotting_subagents_raise_no_alert(self):
        results = self.batch(PLOT, 10)
        for res in results:
            self.assertEqual(res.get("exit_code"), 0, res)
            self.assertEqual(res.get("alerts", []), [], res)
            self.assertIn("configdir /run/job/.matplotlib", res["stdout"], res)
            # matplotlib says so on stderr when it falls back to a temp dir or rebuilds the list.
            self.assertNotIn("temporary config/cache directory", res.get("stderr", ""), res)
            self.assertNotIn("generated new fontManager", res.get("stderr", ""), res)
        imports = sorted(float(x["stdout"].split()[1]) for x in results)
        print(f"\n[plot] pyplot import in ten boxes at once: median {imports[5]:.2f} s, max {imports[-1]:.2f} s")

    def test_the_font_list_is_read_only_and_each_box_its_own(self):
        attack = ("import os, glob\nd = os.environ['MPLCONFIGDIR']\nf = glob.glob(d + '/fontlist-v*.json')[0]\n"
                  "for step in (lambda: open(f, 'w').write('{}'), lambda: os.unlink(f),\n"
                  "             lambda: os.rename(f, d + '/x'), lambda: open(d + '/new', 'w').write('x')):\n"
                  "    try:\n        step(); print('changed')\n    except OSError as e:\n"
                  "        print('refused', e.errno)\n"
                  "print('size', os.path.getsize(f))\n")
        res = self.batch(attack, 1)[0]
        self.assertEqual(res.get("exit_code"), 0, res)
        self.assertNotIn("changed", res["stdout"], res)
        # A later box reads the daemon's list, whole, and uses it (no rebuild, no alert).
        after = self.batch(PLOT, 1)[0]
        self.assertEqual(after.get("alerts", []), [], after)
        self.assertEqual(after.get("exit_code"), 0, after)


    def test_a_python_session_plots_without_an_alert(self):
        r = request(self.d.base, "POST", "/v1/sessions", {"language": "python"})
        self.assertEqual(r.status, 201, r.body[:2000])
        sid = r.json()["session_id"]
        self.addCleanup(lambda: request(self.d.base, "DELETE", f"/v1/sessions/{sid}"))
        for _ in range(2):  # the second cell reuses the imported module
            r = request(self.d.base, "POST", f"/v1/sessions/{sid}/execute", {"code": PLOT})
            self.assertEqual(r.status, 200, r.body[:2000])
            res = r.json()
            self.assertEqual(res.get("alerts", []), [], res)
            self.assertIn("configdir /run/job/.matplotlib", res["stdout"], res)
            self.assertNotIn("temporary config/cache directory", res.get("stderr", ""), res)


if __name__ == "__main__":
    unittest.main()

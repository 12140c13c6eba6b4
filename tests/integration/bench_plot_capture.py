"""Benchmark (issue 21): what rich outputs cost a one-shot run. The same matplotlib program (one
figure, plt.show()) through POST /v1/execute with outputs on (the prelude, the staged PNG, the
helper that reads it back) and with "outputs": false (plain python3 main.py, the figure rendered
to a PNG file by the program itself, so both runs draw the same); and a program without
matplotlib, on and off (the prelude's cost alone). Prints medians and ratios measured in this run.
Run: LSB_BUILD_DIR=build LSB_SOURCE_DIR=. python3 tests/integration/bench_plot_capture.py [N]"""
import os, shutil, statistics, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["LSB_DAEMON_SUITE"] = "1"
from daemon_harness import Daemon, request

POLICY = """version: "1.0"
name: bench-plot
container:
  image: host
  tmpfs:
    /tmp: "size=64M,noexec,nosuid"
commands:
  allow: ["/usr/bin/python3"]
resources:
  cpu: "1"
  memory: "512M"
  timeout: 120
"""
PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot(range(100), [i * i for i in range(100)])\n")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 7
d_pol = tempfile.mkdtemp()
open(os.path.join(d_pol, "bench-plot.yaml"), "w").write(POLICY)
d = Daemon("--pool-size", "0", policies=d_pol)


def run(code, outputs):
    t0 = time.monotonic()
    r = request(d.base, "POST", "/v1/execute", {"code": code, "language": "python", "policy": "bench-plot", "outputs": outputs})
    dt = time.monotonic() - t0
    assert r.status == 200 and r.json()["status"] == "ok", r.body[:2000]
    return dt, r.json()


try:
    cases = {
        "plot, captured": (PLOT + "plt.show()\n", True),
        "plot, saved by the program": (PLOT + "plt.savefig('/tmp/p.png')\n", False),
        "print only, outputs on": ("print(1)\n", True),
        "print only, outputs off": ("print(1)\n", False),
    }
    times = {k: [] for k in cases}
    for _ in range(N):  # interleaved, so a load change hits every case alike
        for name, (code, outputs) in cases.items():
            dt, res = run(code, outputs)
            if name == "plot, captured":
                assert len(res.get("outputs", [])) == 1, res.get("outputs")
            times[name].append(dt)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    for k, v in med.items():
        print(f"{k:32s} median {v:7.0f} ms over {N}")
    print(f"plot capture overhead: {med['plot, captured'] / med['plot, saved by the program']:.2f}x "
          f"(captured / saved by the program)")
    print(f"prelude without a figure: {med['print only, outputs on'] / med['print only, outputs off']:.2f}x")
    print("load average:", open("/proc/loadavg").read().split()[:3])
finally:
    d.stop(); d.close(); shutil.rmtree(d_pol, True)

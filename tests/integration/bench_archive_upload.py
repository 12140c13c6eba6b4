"""Benchmark (issue 21): a 2000-file, ~11 MB archive PUT into a session (parsed on the host, written by
the in-box helper into its tmpfs) vs `tar -x` of the same archive into /dev/shm on the host.
Run: LSB_BUILD_DIR=build LSB_SOURCE_DIR=. python3 tests/integration/bench_archive_upload.py"""
import io, os, subprocess, sys, tarfile, tempfile, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["LSB_DAEMON_SUITE"] = "1"
from daemon_harness import Daemon, request
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    for i in range(2000):
        data = (os.urandom(2600).hex().encode())[:5000]  # text-like, ~5000 bytes
        info = tarfile.TarInfo(f"d{i % 40}/f{i}.txt"); info.size = len(data)
        t.addfile(info, io.BytesIO(data))
plain = buf.getvalue()
import gzip
gz = gzip.compress(plain, 6)
print("archive: plain %.1f MB, gzip %.1f MB, 2000 files" % (len(plain)/1e6, len(gz)/1e6))
d = Daemon("--max-file", "32M")
try:
    sid = request(d.base, "POST", "/v1/sessions", {"language": "python"}).json()["session_id"]
    for name, data in (("tar", plain), ("tar.gz", gz)):
        ts = []
        for k in range(3):
            t0 = time.monotonic()
            r = request(d.base, "PUT", f"/v1/sessions/{sid}/archive?path=/tmp/b{k}{name.replace('.', '')}", data, raw=True)
            ts.append(time.monotonic() - t0)
            assert r.status == 201, r.body
        host = []
        for k in range(3):
            with tempfile.TemporaryDirectory(dir="/dev/shm") as td:
                p = os.path.join(td, "a." + name); open(p, "wb").write(data)
                t0 = time.monotonic()
                subprocess.run(["tar", "-xf", p, "-C", td], check=True)
                host.append(time.monotonic() - t0)
        m, h = statistics.median(ts), statistics.median(host)
        print(f"{name}: PUT archive median {m*1000:.0f} ms, host tar -x median {h*1000:.0f} ms, ratio {m/h:.1f}x")
    request(d.base, "DELETE", f"/v1/sessions/{sid}")
finally:
    d.stop(); d.close()

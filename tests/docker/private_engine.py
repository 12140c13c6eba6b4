"""A private Docker engine for the tests that must stop or restart one: the machine's shared dockerd
(/var/run/docker.sock) serves other engineers and is never touched. This one has its own socket,
data root, exec root (so its own supervised containerd), pid file and config file, no bridge and no
iptables/ip6tables rules, and it runs in a network namespace of its own (`unshare --net`): dockerd
with `--bridge none` DELETES the host's `docker0` at start (moby's removeDefaultBridgeInterface),
which would cut the shared engine's bridge network; in its own namespace there is nothing of the
host's to delete or to rewrite. Our boxes have NetworkMode none, so they need no network there.
Each instance's directories carry the test process's pid, so two suites running at once do not
collide.

The test image is loaded from the tarball scripts/build-test-image.sh caches (an import of a few
seconds: the script finds the image missing in this engine and imports the cached tree).
"""
import os
import shutil
import signal
import subprocess
import time

from daemon_util import SOURCE_DIR, engine_answers


class PrivateEngine:
    def __init__(self, name="lsb-test-docker"):
        tag = f"{name}-{os.getpid()}"
        self.run_dir = f"/run/{tag}"
        self.data_root = f"/var/lib/{tag}"
        self.sock = os.path.join(self.run_dir, "docker.sock")
        self.host = "unix://" + self.sock
        self.exec_root = os.path.join(self.run_dir, "exec")
        self.pidfile = os.path.join(self.run_dir, "docker.pid")
        self.config = os.path.join(self.run_dir, "daemon.json")
        self.log_path = os.path.join(self.run_dir, "dockerd.log")
        self.proc = None
        self.env = dict(os.environ, DOCKER_HOST=self.host)

    def start(self, wait_s=60):
        if shutil.which("dockerd") is None:
            raise RuntimeError("dockerd is not installed (scripts/ensure-docker.sh installs docker.io)")
        os.makedirs(self.run_dir, exist_ok=True)
        os.makedirs(self.data_root, exist_ok=True)
        if not os.path.exists(self.config):
            with open(self.config, "w") as f:
                f.write("{}\n")  # not /etc/docker/daemon.json: nothing of the shared engine's setup
        host_ifaces = set(os.listdir("/sys/class/net"))
        log = open(self.log_path, "a")
        if shutil.which("unshare") is None:
            raise RuntimeError("unshare (util-linux) is missing: the private dockerd needs its own network namespace")
        self.proc = subprocess.Popen(
            ["unshare", "--net", "--", "dockerd", "--config-file", self.config, "--host", self.host, "--data-root", self.data_root,
             "--exec-root", self.exec_root, "--pidfile", self.pidfile, "--bridge", "none",
             "--iptables=false", "--ip6tables=false", "--ip-masq=false"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"private dockerd exited ({self.proc.returncode}):\n{self.log_tail()}")
            if engine_answers(self.sock):
                gone = host_ifaces - set(os.listdir("/sys/class/net"))
                if gone:  # the guard against touching the shared engine's network
                    raise RuntimeError(f"the host lost network interfaces {sorted(gone)} while the private dockerd started")
                return
            time.sleep(0.1)
        raise RuntimeError(f"private dockerd did not answer on {self.sock} within {wait_s} s:\n{self.log_tail()}")

    def stop(self, timeout=60):
        """SIGTERM and wait (the engine stops its containers first); SIGKILL after `timeout`. Its
        supervised containerd is stopped by it; after a SIGKILL that one is killed by its pid file."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        pidfile = os.path.join(self.exec_root, "containerd", "containerd.pid")
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip())
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if self.exec_root.encode() in f.read():  # still that containerd, not a reused pid
                    os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass

    def restart(self):
        self.stop()
        self.start()

    def load_test_image(self):
        subprocess.run([os.path.join(SOURCE_DIR, "scripts", "build-test-image.sh")], check=True, timeout=900,
                       env=self.env)

    def log_tail(self, n=30):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def destroy(self):
        """Stop the engine and remove all it had: its mounts, data root and run dir."""
        self.stop()
        with open("/proc/self/mounts") as f:
            mounts = [line.split()[1] for line in f]
        for m in sorted(mounts, key=len, reverse=True):
            if m.startswith((self.data_root + "/", self.run_dir + "/")):
                subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(self.data_root, ignore_errors=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)

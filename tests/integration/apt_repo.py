"""A tiny local apt repository for container.build.apt's tests (native and Docker).

make_deb() builds a real Debian package with dpkg-deb (it installs /usr/share/lsb-apt-test/hello.txt);
AptRepo writes a flat repository around it (apt-ftparchive packages/release) and serves it on
127.0.0.1 with a real HTTP server that counts the requests it gets. A policy names it as
`deb [trusted=yes] http://apt.test:PORT/ ./`, apt.test pinned to 127.0.0.1 through the egress
proxy's resolve option. Needs dpkg-deb and apt-ftparchive (apt-utils; scripts/install-deps.sh).
"""
import os
import shutil
import subprocess

from served_dir import ServedDir

PACKAGE = "lsb-apt-hello"
VERSION = "1.0-1"
INSTALLED_FILE = "/usr/share/lsb-apt-test/hello.txt"
INSTALLED_TEXT = "hello from the loopback apt repository"
# A debootstrap'd Debian tree with apt, dpkg and python3 (scripts/build-test-image.sh keeps it).
DEBIAN_TARBALL = os.path.join(os.environ.get("LSB_CACHE_DIR") or os.path.expanduser("~/.cache/llm-sandbox"),
                              "debian-bookworm-minbase-python3-stdlib.tar")


def unavailable():
    for tool in ("dpkg-deb", "apt-ftparchive"):
        if not shutil.which(tool):
            return f"{tool} is missing (scripts/install-deps.sh installs apt-utils and dpkg)"
    return None


def make_deb(directory):
    """dpkg-deb --build of a package with one data file; returns the .deb's path."""
    root = os.path.join(directory, "pkgroot")
    os.makedirs(os.path.join(root, "DEBIAN"))
    os.makedirs(os.path.join(root, os.path.dirname(INSTALLED_FILE.lstrip("/"))))
    with open(os.path.join(root, INSTALLED_FILE.lstrip("/")), "w") as f:
        f.write(INSTALLED_TEXT + "\n")
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {PACKAGE}\nVersion: {VERSION}\nArchitecture: {arch}\nMaintainer: LLM Sandbox tests <t@example.invalid>\n"
                "Description: a file for container.build.apt's tests\n")
    deb = os.path.join(directory, f"{PACKAGE}_{VERSION}_{arch}.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", root, deb], check=True, capture_output=True)
    shutil.rmtree(root)
    return deb


class AptRepo(ServedDir):
    """A flat repository ("deb [trusted=yes] http://HOST:PORT/ ./") on 127.0.0.1:0."""

    def __init__(self, root):
        os.makedirs(root)
        make_deb(root)
        with open(os.path.join(root, "Packages"), "w") as f:
            subprocess.run(["apt-ftparchive", "packages", "."], cwd=root, stdout=f, check=True)
        release = subprocess.run(["apt-ftparchive", "release", "."], cwd=root, capture_output=True, text=True, check=True)
        with open(os.path.join(root, "Release"), "w") as f:
            f.write(release.stdout)
        super().__init__(root)

    def source(self, host="apt.test"):
        return f"deb [trusted=yes] http://{host}:{self.port}/ ./"

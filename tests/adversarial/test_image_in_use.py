"""A running native box's stored image cannot be removed from under it (docs/images.md "Images in
use"): with a box running on the adversarial suite's test image (image_fixture.py, imported into a
temp store), `llm-sandbox image rm` is refused naming the image, `image prune` leaves its layers,
and once the box has ended the same `image rm` succeeds. Real box, real store; needs root."""
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import image_fixture  # noqa: E402
from backends import BINARY, SEED_POLICY, SOURCE_DIR, Native  # noqa: E402

WHY = Native().unavailable() or image_fixture.unavailable()


@unittest.skipIf(WHY, WHY)
class StoredImageInUse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = image_fixture.prepare(BINARY)
        with open(SEED_POLICY) as f:
            text = image_fixture.policy_text(f.read())
        fd, cls.policy = tempfile.mkstemp(prefix="lsb-in-use-", suffix=".yaml")
        with os.fdopen(fd, "w") as f:
            f.write(text)

    @classmethod
    def tearDownClass(cls):
        os.unlink(cls.policy)
        image_fixture.cleanup()

    def image(self, *args):
        return subprocess.run([BINARY, "image", args[0], "--store", self.fx["store"], *args[1:]],
                              capture_output=True, text=True, timeout=120)

    def test_rm_of_an_image_a_running_box_uses_is_refused_until_the_box_ends(self):
        box = subprocess.Popen([BINARY, "run", "--backend", "native", "--json", "--policy", self.policy,
                                "--images", self.fx["images"], "-"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=SOURCE_DIR)
        try:
            box.stdin.write("import time\nprint('UP', flush=True)\ntime.sleep(4)\n")
            box.stdin.close()
            inuse = os.path.join(self.fx["store"], "meta", "inuse")
            deadline = time.time() + 30
            while time.time() < deadline and not (os.path.isdir(inuse) and os.listdir(inuse)):
                time.sleep(0.05)
            self.assertTrue(os.listdir(inuse), "the box left no in-use mark")
            time.sleep(0.5)  # the box is past its start
            self.assertIsNone(box.poll(), "the box ended before the test could use it")
            rm = self.image("rm", image_fixture.IMAGE)
            self.assertEqual(rm.returncode, 1, rm.stdout + rm.stderr)
            self.assertIn("is in use by a running box", rm.stderr)
            self.assertEqual(self.image("prune").returncode, 0)
            for layer in self.fx["layers"]:
                self.assertTrue(os.path.isdir(layer), f"{layer} removed under a running box")
            box.wait(timeout=60)
            out = box.stdout.read()
            self.assertIn("UP", out)
        finally:
            if box.poll() is None:
                box.kill()
                box.wait()
            box.stdout.close()
            box.stderr.close()
        deadline = time.time() + 30  # the CLI's teardown helper holds the mark until the box is gone
        while True:
            rm = self.image("rm", image_fixture.IMAGE)
            if rm.returncode == 0 or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(rm.returncode, 0, rm.stderr)
        for layer in self.fx["layers"]:
            self.assertFalse(os.path.exists(layer))


if __name__ == "__main__":
    unittest.main()

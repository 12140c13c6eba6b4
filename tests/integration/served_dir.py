"""A directory served on 127.0.0.1:0 by a real HTTP server that records the paths asked of it: the
loopback package index (test_environment_build.py) and apt repository (apt_repo.py) of the
container.build tests, which assert what a build fetched and that a cached one fetched nothing."""
import http.server
import threading


class ServedDir:
    def __init__(self, root):
        served = self
        self.requests = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=root, **k)

            def do_GET(self):
                served.requests.append(self.path)
                return super().do_GET()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()

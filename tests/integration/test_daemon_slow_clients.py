"""Slow clients cannot lock everyone out (issue 15, class 6; docs/security.md): the real
`llm-sandbox serve` on the native backend, with 1000 connections that trickle their request head
held open from several loopback source addresses and from one, a trickled body, a client that never
reads its answers, an idle keep-alive connection and a flood of new connections. Through all of
them /healthz answers within 100 ms and a real POST /v1/execute succeeds.

The figures (latencies, reconnects, daemon threads) are printed for the report."""
import os
import resource
import select
import socket
import statistics
import threading
import time
import unittest

from daemon_harness import Daemon, request, sanitized_build, skip_unless_daemon_suite

SLOW = int(os.environ.get("LSB_SLOW_CONNECTIONS", "1000"))


# The 100 ms answer is the release build's promise. Under ASan every thread start and allocation
# costs several times more; there the suite checks that nobody is locked out (and that no sanitizer
# reports), with a budget of a second.
HEALTHZ_BUDGET_S = 1.0 if sanitized_build() else 0.100
FLOOD_RATE_PER_ADDRESS = 1000  # new connections a second, from each of 4 addresses


def raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise unittest.SkipTest(f"RLIMIT_NOFILE hard limit {hard} < {need}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return -1


def threads_of(pid):
    return status_field(pid, "Threads")


def timed_healthz(port, source="127.0.0.1"):
    """One GET /healthz on a fresh connection; (status, seconds) from connect to the whole answer."""
    start = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    data = b""
    try:
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass  # a refusal may be cut short; what arrived says which
    finally:
        s.close()
    elapsed = time.monotonic() - start
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, elapsed


def read_answer(s):
    """The answer to GET /healthz on a kept-alive connection (its JSON body ends in '}')."""
    data = b""
    while not data.endswith(b"}"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


class Tricklers:
    """`count` connections from `sources` (round robin) that each send one more byte of a request
    head that never ends, every `interval` seconds; a connection the daemon closes is opened again,
    so `count` stay open on the client's side the whole time."""

    HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 60000

    def __init__(self, port, count, sources, interval=0.5):
        self.port, self.count, self.sources, self.interval = port, count, sources, interval
        self.socks = {}  # socket -> bytes of HEAD sent
        self.reconnects = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        for i in range(count):
            self._open(i)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self, i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((self.sources[i % len(self.sources)], 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        self.socks[s] = (i, 0)

    def _run(self):
        while not self.stop.is_set():
            with self.lock:
                # Readable or hung up means the daemon answered (408/503) or closed it: open again.
                poller = select.poll()
                by_fd = {s.fileno(): s for s in self.socks}
                for fd in by_fd:
                    poller.register(fd, select.POLLIN)
                dead = {by_fd[fd] for fd, _ in poller.poll(0)}
                for s, (i, sent) in list(self.socks.items()):
                    if s not in dead:
                        try:
                            s.send(self.HEAD[sent:sent + 1])
                            self.socks[s] = (i, sent + 1)
                        except (BlockingIOError, InterruptedError):
                            pass  # still connecting (the backlog), or a full buffer
                        except OSError:
                            dead.add(s)
                for s in dead:
                    i, _ = self.socks.pop(s)
                    s.close()
                    self.reconnects += 1
                    self._open(i)
            self.stop.wait(self.interval)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=10)
        for s in self.socks:
            s.close()


class SlowClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_unless_daemon_suite()
        raise_fd_limit(4 * SLOW + 1024)  # inherited by the daemon too

    def start(self, *flags):
        d = Daemon(*flags)
        self.addCleanup(d.close)
        return d

    def assert_served_while_held(self, d, sources, label):
        tricklers = Tricklers(d.port, SLOW, sources)
        self.addCleanup(tricklers.close)
        time.sleep(3)  # every trickler connected and sending; the table is full
        latencies, statuses, evicted = [], [], 0
        for n in range(30):
            status, elapsed = timed_healthz(d.port, sources[n % len(sources)])
            if status == 0 and len(sources) == 1 and evicted < 3:
                # One address shared with 1000 tricklers over a per-peer cap of 128: the daemon cannot
                # tell the real client from the flood, and under load (ASan, a busy host) a fresh
                # connection can be evicted before its request is read (docs/api.md "Connection
                # limits"). A client retries; the retry must be served. More than 3 of 30 fails.
                evicted += 1
                status, elapsed = timed_healthz(d.port, sources[n % len(sources)])
            statuses.append(status)
            latencies.append(elapsed)
            time.sleep(0.05)
        r = request(d.base, "POST", "/v1/execute", {"code": "print(6 * 7)"}, timeout=60)
        threads = threads_of(d.proc.pid)
        rss_kib = status_field(d.proc.pid, "VmRSS")
        with tricklers.lock:
            held = len(tricklers.socks)
        print(f"\n{label}: {SLOW} slow connections from {len(sources)} address(es) held; /healthz "
              f"median {statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms; "
              f"probes evicted and retried {evicted}; reconnects {tricklers.reconnects}; daemon threads {threads}, RSS {rss_kib / 1024:.1f} MiB", flush=True)
        self.assertEqual(held, SLOW)
        self.assertEqual(statuses, [200] * len(statuses), statuses)
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual((r.json()["status"], r.json()["stdout"]), ("ok", "42\n"))
        # Every answer within the budget; a few late probes of 30 are scheduling noise on a shared
        # machine (measured at load 10: 2, at 118 and 217 ms), a slot held from a client is not.
        late = [round(x * 1000, 1) for x in latencies if x > HEALTHZ_BUDGET_S]
        self.assertLessEqual(len(late), 3, f"/healthz slower than {HEALTHZ_BUDGET_S * 1000:.0f} ms: {late} ms")
        self.assertLess(max(latencies), 10 * HEALTHZ_BUDGET_S, latencies)
        # The table bounds the daemon's threads: max connections + closing ones + its own.
        self.assertLess(threads, 2 * 512 + 64)

    def test_1000_slow_heads_from_ten_addresses(self):
        d = self.start()
        self.assert_served_while_held(d, [f"127.0.0.{i}" for i in range(1, 11)], "ten addresses")

    def test_1000_slow_heads_from_one_address(self):
        d = self.start()
        self.assert_served_while_held(d, ["127.0.0.1"], "one address")

    def test_a_full_table_of_idle_and_half_read_connections_still_serves(self):
        d = self.start("--max-connections", "8", "--max-connections-per-peer", "8")

        def connect(first_bytes):
            s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
            self.addCleanup(s.close)
            s.sendall(first_bytes)
            return s

        def closed_now(socks):
            out = []
            for s in socks:
                s.setblocking(False)
                try:
                    out.append(s.recv(65536, socket.MSG_PEEK) == b"")
                except BlockingIOError:
                    out.append(False)
                except OSError:
                    out.append(True)
            return out

        def closed(socks, expected):
            # An eviction closes at once, but the daemon's thread may be slow to get there (ASan, a
            # loaded machine): wait up to 5 s for the expected picture, then hold it for 0.3 s so a
            # late, wrong eviction is seen too.
            deadline = time.monotonic() + 5
            while closed_now(socks) != expected and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
            return closed_now(socks)

        # Eviction picks the oldest progress the daemon recorded; spacing arrivals well beyond a
        # thread's scheduling delay keeps that order the order of this test.
        gap = 0.25 if sanitized_build() else 0.05

        idle = []
        for _ in range(4):  # kept alive after one request: their progress is oldest
            s = connect(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{d.port}\r\n\r\n".encode())
            self.assertTrue(read_answer(s).startswith(b"HTTP/1.1 200"))
            idle.append(s)
            time.sleep(gap)
        half = []
        for _ in range(4):  # a body that stops after one byte
            half.append(connect(b"POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"))
            time.sleep(gap)
        # Full: a quick request is served, in the slot of the most stalled connection.
        self.assertEqual(timed_healthz(d.port)[0], 200)
        self.assertEqual(closed(idle + half, [True] + [False] * 7), [True] + [False] * 7)
        # Four more stalled arrivals: the first takes the free slot, the next three displace the
        # other idle ones; then a quick request displaces the oldest half-read one.
        later = []
        for _ in range(4):
            later.append(connect(b"GET /"))
            time.sleep(gap)
        self.assertEqual(closed(idle + half + later, [True] * 4 + [False] * 8), [True] * 4 + [False] * 8)
        self.assertEqual(timed_healthz(d.port)[0], 200)
        self.assertEqual(closed(half + later, [True] + [False] * 7), [True] + [False] * 7)

    def test_trickled_body_is_cut_by_its_rate_deadline(self):
        d = self.start("--body-timeout", "1s", "--min-transfer-rate", "1K")
        s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 50000\r\n\r\n")
        start = time.monotonic()
        answer = b""
        while time.monotonic() - start < 10:
            try:
                s.send(b" ")  # 10 bytes/s: far below 1 KiB/s
            except OSError:
                break
            r, _, _ = select.select([s], [], [], 0.1)
            if r:
                break
        elapsed = time.monotonic() - start
        # The answer may come in several segments: read it to its end (the daemon closes).
        s.settimeout(5)
        try:
            while chunk := s.recv(4096):
                answer += chunk
        except OSError:
            pass
        self.assertIn(b"408 Request Timeout", answer)
        self.assertIn(b"request_timeout", answer)
        self.assertLess(elapsed, 3.0)  # the 1 s floor plus what 10 bytes earned; not the claimed 50 KB / rate

    def test_a_fast_body_of_the_same_size_passes(self):
        d = self.start("--body-timeout", "1s", "--min-transfer-rate", "1K")
        # 50 KB of padding in the program (env values are bounded at 32 KiB, Class 8).
        body = ('{"code": "print(1)\\n#' + "x" * 50000 + '"}')
        r = request(d.base, "POST", "/v1/execute", raw=True, body=body.encode(),
                    headers={"Content-Type": "application/json"}, timeout=60)
        self.assertEqual(r.status, 200, r.body[:300])

    def test_trickled_head_is_cut_by_the_header_deadline(self):
        d = self.start("--header-timeout", "1s")
        s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        self.addCleanup(s.close)
        start = time.monotonic()
        answer = b""
        for ch in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb":
            try:
                s.send(bytes([ch]))
            except OSError:
                break
            r, _, _ = select.select([s], [], [], 0.05)
            if r:
                break
        elapsed = time.monotonic() - start
        while b"\r\n\r\n" not in answer:  # the status line and headers may come in more than one segment
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        self.assertIn(b"408 Request Timeout", answer)
        self.assertLess(elapsed, 2.0)

    def test_idle_keepalive_connection_is_closed(self):
        d = self.start("--keepalive-timeout", "1s")
        s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{d.port}\r\n\r\n".encode())
        self.assertTrue(read_answer(s).startswith(b"HTTP/1.1 200"))
        start = time.monotonic()
        self.assertEqual(s.recv(4096), b"")  # the daemon closed it
        self.assertLess(time.monotonic() - start, 3.0)

    def test_client_that_never_reads_is_cut_by_the_write_deadline(self):
        # Two slots only, per peer too; two clients pipeline requests and never read the answers.
        d = self.start("--max-connections", "2", "--max-connections-per-peer", "2",
                       "--write-timeout", "1s", "--min-transfer-rate", "64K")
        # The dashboard page (tens of KB an answer): the daemon's send buffer and the client's receive
        # buffer fill after a few hundred answers, even on a loaded machine.
        pipelined = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{d.port}\r\n\r\n".encode() * 20000
        # Once both writers are blocked on a full socket (busy), a newcomer finds no slot to evict
        # (503, or a reset that cut the 503 short). A probe that comes before a writer is busy
        # evicts it (that is the rule for idle connections), so the setup is tried again: on a
        # loaded machine the writers may take a while to fill their sockets.
        status_now = 200
        for _attempt in range(4):
            stuck = []
            for _ in range(2):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(("127.0.0.1", d.port))
                s.settimeout(15)
                self.addCleanup(s.close)
                stuck.append(s)
                threading.Thread(target=lambda s=s: self._send_ignoring_errors(s, pipelined), daemon=True).start()
            time.sleep(1.0)
            status_now = timed_healthz(d.port)[0]
            if status_now != 200:
                break
            for s in stuck:
                s.close()
            time.sleep(2.0)  # the daemon cuts what is left of them at the write deadline
        start = time.monotonic()
        status = 0
        while time.monotonic() - start < 10:
            status = timed_healthz(d.port)[0]
            if status == 200:
                break
            time.sleep(0.1)
        freed_after = time.monotonic() - start
        print(f"\nnever-reading clients: /healthz {status_now} while they block, 200 after {freed_after:.2f} s",
              flush=True)
        self.assertIn(status_now, (503, 0))
        self.assertEqual(status, 200)
        self.assertLess(freed_after, 5.0)  # 1 s floor + one answer's bytes at 64K/s; not a minute

    @staticmethod
    def _send_ignoring_errors(s, data):
        try:
            s.sendall(data)
        except OSError:
            pass

    def test_connection_flood_does_not_starve_a_real_client(self):
        d = self.start()
        stop = threading.Event()
        counts = [0]

        # Each address connects as fast as it can, up to FLOOD_RATE_PER_ADDRESS a second. A local
        # process with as much CPU as the daemon's acceptor could always out-connect it and fill
        # the kernel's accept queue (that is the firewall's to limit, docs/security.md class 6);
        # the rate says what the daemon is shown to withstand, the same on any machine.
        def flood(source):
            started, n = time.monotonic(), 0
            while not stop.is_set():
                n += 1
                ahead = started + n / FLOOD_RATE_PER_ADDRESS - time.monotonic()
                if ahead > 0.01:  # ahead of the rate: sleep in 10 ms steps (finer ones oversleep)
                    time.sleep(ahead)
                try:
                    s = socket.socket()
                    s.bind((source, 0))
                    s.settimeout(2)
                    s.connect(("127.0.0.1", d.port))
                    counts[0] += 1
                    if counts[0] % 2:
                        s.close()  # connect and leave
                    else:
                        with held_lock:
                            held.append(s)  # connect and say nothing
                            if len(held) > 800:
                                held.pop(0).close()
                except OSError:
                    pass

        held, held_lock = [], threading.Lock()
        floods = [threading.Thread(target=flood, args=(f"127.0.1.{i}",), daemon=True) for i in range(1, 5)]
        for t in floods:
            t.start()
        self.addCleanup(lambda: [s.close() for s in list(held)])
        try:
            time.sleep(1)
            latencies = []
            for _ in range(20):
                status, elapsed = timed_healthz(d.port)
                self.assertEqual(status, 200)
                latencies.append(elapsed)
            r = request(d.base, "POST", "/v1/execute", {"code": "print('through')"}, timeout=60)
            threads = threads_of(d.proc.pid)
        finally:
            stop.set()
            for t in floods:
                t.join(timeout=10)
        print(f"\nflood: {counts[0]} connections opened; /healthz median {statistics.median(latencies) * 1000:.1f} ms,"
              f" max {max(latencies) * 1000:.1f} ms; daemon threads {threads}", flush=True)
        self.assertEqual(r.status, 200, r.body[:300])
        # Up to 800 silent connections are held open: they wait in the acceptor without a thread
        # each (a thread per connection measured 547 here).
        self.assertLess(threads, 200)
        self.assertEqual(r.json()["stdout"], "through\n")
        self.assertGreater(counts[0], 200)  # the flood did happen
        # Starvation is refusals or a client never served. Every probe was answered 200 (above);
        # most within the budget; none later than two SYN retransmits (1 s, then 2 s more): on a
        # loaded 2-core machine the flooding process and the daemon's acceptor share the CPU, and
        # the first probes may queue behind the flood's burst (measured at load 20: 7 of 20 took
        # 0.5-1.3 s, then 0.6 ms each; the median 1.1 ms).
        self.assertLessEqual(statistics.median(latencies), HEALTHZ_BUDGET_S, latencies)
        self.assertLess(max(latencies), 3.0 + 10 * HEALTHZ_BUDGET_S, latencies)


if __name__ == "__main__":
    unittest.main()

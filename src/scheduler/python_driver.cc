#include "scheduler/python_driver.h"

#include <charconv>
#include <cstdio>

#include "base/random_id.h"
#include "protocol/alert_coalescer.h"

namespace lsb::sched {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = InteractiveRun::Piece::Kind;

// Kept small and dependency-free (os, sys, io, traceback): it runs under `python3 -I -S` too.
// The user's code gets its own globals dict; the driver's state lives in _lsb_main's locals.
constexpr const char* kDriver = R"PY(import io, os, sys, traceback

def _lsb_main():
    src = os.dup(0)
    nul = os.open('/dev/null', os.O_RDONLY)
    os.dup2(nul, 0)
    os.close(nul)
    buf = bytearray()

    def fill():
        chunk = os.read(src, 65536)
        if not chunk:
            os._exit(0)
        buf.extend(chunk)

    def line():
        while b'\n' not in buf:
            fill()
        i = buf.index(b'\n')
        out = bytes(buf[:i])
        del buf[:i + 1]
        return out

    def exact(n):
        while len(buf) < n:
            fill()
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def write_all(fd, data):
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]

    def flush():
        for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                s.flush()
            except Exception:
                pass

    def checked(path):
        if not path.startswith('/') or os.path.realpath(os.path.dirname(path)) != os.path.dirname(path):
            raise PermissionError('the path has a symbolic link in it: ' + path)
        return path

    class _Over(Exception):
        pass

    def records(blob):
        at = 0
        while at < len(blob):
            nl = blob.index(b'\n', at)
            kind, n, m = blob[at:nl].split(b' ')
            p = nl + 1 + int(n)
            yield kind, blob[nl + 1:p].decode('utf-8', 'surrogateescape'), blob[p:p + int(m)]
            at = p + int(m)

    def record(out, kind, path, payload):
        p = path.encode('utf-8', 'surrogateescape')
        out += b'%s %d %d\n' % (kind, len(p), len(payload))
        out += p
        out += payload

    def read_regular(path, limit):
        fd = os.open(checked(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if (st.st_mode & 0o170000) != 0o100000:
                raise _Over('not a regular file')
            if st.st_size > limit:
                raise _Over('the file is %d bytes; the limit is %d' % (st.st_size, limit))
            chunks, got = [], 0
            while got <= limit:
                c = os.read(fd, min(1 << 20, limit + 1 - got))
                if not c:
                    break
                chunks.append(c)
                got += len(c)
            if got > limit:
                raise _Over('the file grew past the limit of %d bytes' % limit)
            return b''.join(chunks), st.st_mode
        finally:
            os.close(fd)

    # Archive entries the host parsed and checked (archive_in.h): directories and files only.
    def unpack(blob):
        for kind, path, payload in records(blob):
            try:
                if kind == b'd':
                    os.makedirs(path, exist_ok=True)
                    if os.path.realpath(path) != path:
                        raise PermissionError('the path has a symbolic link in it')
                    continue
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(checked(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
                try:
                    os.fchmod(fd, 0o755 if kind == b'x' else 0o644)
                    write_all(fd, payload)
                finally:
                    os.close(fd)
            except OSError as e:
                raise OSError('%s: %s' % (path, e.strerror or e))

    # collect: the files matching each pattern, bounded in count and bytes; an 'e' record says
    # why one could not be returned, an 'n' record names a pattern nothing matched.
    def collect(patterns, limits):
        import glob, itertools
        max_files, max_total, max_file = (int(x) for x in limits.split())
        out, files, total = bytearray(), 0, 0
        for pat in patterns.decode('utf-8', 'surrogateescape').split('\n'):
            found = sorted(itertools.islice(glob.iglob(pat), max_files + 1))
            if not found:
                record(out, b'n', pat, b'no file matches')
            for path in found:
                if files >= max_files:
                    record(out, b'e', path, b'more than %d files matched; the rest are not returned' % max_files)
                    return out
                try:
                    data, _ = read_regular(path, min(max_file, max_total - total))
                except (_Over, OSError) as e:
                    why = str(e)
                    if isinstance(e, _Over) and 'limit' in why and max_total - total < max_file:
                        why += ' (what collect returns in all: %d bytes)' % max_total
                    record(out, b'e', path, why.encode('utf-8', 'replace'))
                    continue
                files += 1
                total += len(data)
                record(out, b'f', path, data)
        return out

    # A directory's tree (no link followed): 'd' directories, 'f'/'x' files, 's' skipped entries.
    def tree(top, limits):
        top = top.decode('utf-8', 'surrogateescape')
        max_entries, max_bytes = (int(x) for x in limits.split())
        if os.path.realpath(top) != top or not os.path.isdir(top):
            raise OSError(2, 'not a directory (or a path with a symbolic link in it): ' + top)
        out, entries, total = bytearray(), 0, 0
        for d, dirs, names in os.walk(top):
            dirs.sort()
            for n in sorted(dirs + names):
                path = d + '/' + n
                entries += 1
                if entries > max_entries:
                    raise _Over('%s has more than %d entries' % (top, max_entries))
                st = os.lstat(path)
                kind = st.st_mode & 0o170000
                if kind == 0o040000:
                    record(out, b'd', path, b'')
                elif kind == 0o100000:
                    if total + st.st_size > max_bytes:
                        raise _Over('%s holds more than %d bytes of files' % (top, max_bytes))
                    data, mode = read_regular(path, max_bytes - total)
                    total += len(data)
                    record(out, b'x' if mode & 0o111 else b'f', path, data)
                else:
                    record(out, b's', path, b'')
        return out

    marker = line().decode()
    user = {'__name__': '__main__', '__builtins__': __builtins__}
    while True:
        op, a, b = line().split(b' ')
        first = exact(int(a))
        status = 0
        if op == b'X':
            data = exact(int(b))
            sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding='utf-8', errors='replace')
            try:
                exec(compile(first.decode('utf-8', 'replace'), '<session>', 'exec'), user)
            except SystemExit as e:
                if e.code is None:
                    status = 0
                elif isinstance(e.code, int):
                    status = e.code & 255
                else:
                    print(e.code, file=sys.stderr)
                    status = 1
            except BaseException as e:
                traceback.print_exception(type(e), e, e.__traceback__.tb_next)
                status = 1
            flush()
        elif op in (b'A', b'G', b'T'):
            data = exact(int(b))
            try:
                if op == b'A':
                    unpack(first)
                else:
                    write_all(1, bytes(collect(first, data) if op == b'G' else tree(first, data)))
            except _Over as e:
                status = 3
                sys.stderr.write(str(e))
            except OSError as e:
                status = 4
                sys.stderr.write(str(e))
            flush()
        elif op in (b'W', b'R'):
            path = first.decode('utf-8', 'surrogateescape')
            data = exact(int(b)) if op == b'W' else b''
            try:
                if op == b'W':
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    fd = os.open(checked(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
                    try:
                        write_all(fd, data)
                    finally:
                        os.close(fd)
                else:
                    fd = os.open(checked(path), os.O_RDONLY | os.O_NOFOLLOW)
                    try:
                        st = os.fstat(fd)
                        if not (st.st_mode & 0o170000) == 0o100000:
                            raise IsADirectoryError('not a regular file: ' + path)
                        if st.st_size > int(b):
                            status = 3
                            sys.stderr.write('the file is %d bytes; the limit is %d' % (st.st_size, int(b)))
                        else:
                            chunks = []
                            while True:
                                c = os.read(fd, 1 << 20)
                                if not c:
                                    break
                                chunks.append(c)
                            flush()
                            write_all(1, b''.join(chunks))
                    finally:
                        os.close(fd)
            except FileNotFoundError as e:
                status = 2
                sys.stderr.write(str(e))
            except OSError as e:
                status = 3 if e.errno == 27 else 4
                sys.stderr.write(str(e))
            flush()
        write_all(1, ('\x1e%s:%d\n' % (marker, status)).encode())
        write_all(2, ('\x1e%s\n' % marker).encode())

_lsb_main()
)PY";

std::string RandomMarker() { return RandomHex("LSB-END-", 12); }

protocol::Event SessionAlert(const std::string& message, uint64_t time_ms) {
  protocol::Event e = protocol::MakeAlert(protocol::AlertRule::kInterpreterRestarted, "session", message);
  e.time_ms = time_ms;
  return e;
}

protocol::Event TimeoutAlert(uint64_t timeout_ms, uint64_t time_ms) {
  protocol::Event e = protocol::MakeAlert(protocol::AlertRule::kTimeout, "timeout",
                                          "killed at the timeout of " + std::to_string(timeout_ms) + " ms");
  e.time_ms = time_ms;
  return e;
}

}  // namespace

const std::string& PythonDriverSource() {
  static const std::string s = kDriver;
  return s;
}

Status CheckDriverSupported(const Policy& policy) {
  const Language* py = policy.FindLanguage("python");
  if (!py || py->command.empty())
    return Error{"policy '" + policy.name + "' has no python language; file transfer and the python session interpreter need one"};
  if (!policy.Allows(py->command[0]) || policy.Denies(py->command[0]))
    return Error{"policy '" + policy.name + "' does not allow " + py->command[0] +
                 ", which file transfer into and out of its boxes runs; allow it or use another policy"};
  return OkStatus();
}

Result<std::unique_ptr<PythonDriver>> PythonDriver::Start(BoxSession& session, uint64_t lifetime_ms) {
  const Policy& policy = session.policy();
  LSB_TRY(CheckDriverSupported(policy));
  ExecRequest req;
  req.language = "python";
  req.code = "";
  req.stdin_data = "";
  LSB_ASSIGN_OR_RETURN(protocol::RunSpec spec, BuildRunSpec(policy, req));
  spec.file_name = "lsb_driver.py";
  spec.timeout_ms = lifetime_ms;
  // The host enforces each op's own cap; the driver's whole-life output has none of its own.
  spec.output_limit_bytes = uint64_t{1} << 50;
  std::unique_ptr<PythonDriver> d(new PythonDriver(session));
  LSB_ASSIGN_OR_RETURN(d->run_, InteractiveRun::Start(session, spec, PythonDriverSource()));
  d->marker_ = RandomMarker();
  d->run_->SendStdin(d->marker_ + "\n");
  return d;
}

PythonDriver::~PythonDriver() { Stop(); }

void PythonDriver::WaitExit(std::chrono::milliseconds within) {
  auto deadline = Clock::now() + within;
  while (run_ && !run_->exited()) {
    auto p = run_->Next(deadline);
    if (!p.ok()) return;  // the session is marked unusable by InteractiveRun
    if (p->kind == Kind::kDeadline) {
      // init did not end the run in time: the box cannot be trusted for another run.
      session_.box().Kill();
      session_.MarkUnusable();
      return;
    }
  }
}

void PythonDriver::Stop() {
  if (!alive()) return;
  run_->CloseStdin();
  auto deadline = Clock::now() + std::chrono::milliseconds(500);
  while (!run_->exited()) {
    auto p = run_->Next(deadline);
    if (!p.ok()) return;
    if (p->kind == Kind::kDeadline) break;
  }
  if (!run_->exited()) {
    run_->Kill();
    WaitExit(std::chrono::milliseconds(5000));
  }
}

Result<PythonDriver::Reply> PythonDriver::Send(const std::string& header, const std::string& a,
                                               const std::string& b, uint64_t timeout_ms,
                                               uint64_t output_cap) {
  if (!alive()) return Error{"the session's python driver is not running"};
  run_->SendStdin(header);
  run_->SendStdin(a);
  run_->SendStdin(b);
  const std::string out_mark = "\x1e" + marker_ + ":";
  const std::string err_mark = "\x1e" + marker_ + "\n";
  Reply rep;
  // This execution's alerts, bounded here (init's bound refills over the interpreter's life).
  protocol::AlertCoalescer alerts;
  auto with_summaries = [&]() -> Reply& {
    for (auto& s : alerts.TakeSummaries())
      if (s.rule != protocol::AlertRule::kNone) rep.events.push_back(std::move(s));
    return rep;
  };
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t out_at = std::string::npos, err_at = std::string::npos;
  for (;;) {
    if (out_at == std::string::npos) {
      out_at = rep.out.find(out_mark);
    }
    if (err_at == std::string::npos) err_at = rep.err.find(err_mark);
    if (out_at != std::string::npos && rep.out.find('\n', out_at) != std::string::npos &&
        err_at != std::string::npos)
      break;
    uint64_t kept_out = out_at == std::string::npos ? rep.out.size() : out_at;
    uint64_t kept_err = err_at == std::string::npos ? rep.err.size() : err_at;
    if (kept_out + kept_err > output_cap + out_mark.size() + err_mark.size() + 16) {
      rep.over_cap = true;
      run_->Kill();
      WaitExit(std::chrono::milliseconds(5000));
      return with_summaries();
    }
    LSB_ASSIGN_OR_RETURN(auto piece, run_->Next(deadline));
    switch (piece.kind) {
      case Kind::kStdout: rep.out += piece.data; break;
      case Kind::kStderr: rep.err += piece.data; break;
      case Kind::kEvent:
        if (piece.event.rule != protocol::AlertRule::kNone && alerts.Admit(piece.event)) rep.events.push_back(std::move(piece.event));
        break;
      case Kind::kExit:
        rep.run_ended = true;
        rep.exit = piece.exit;
        return with_summaries();
      case Kind::kDeadline:
        rep.deadline = true;
        run_->Kill();
        WaitExit(std::chrono::milliseconds(5000));
        return with_summaries();
    }
  }
  size_t nl = rep.out.find('\n', out_at);
  // The reply comes from a process the session's code shares (a session is one trust domain,
  // docs/security.md Class 9): parse it as hostile, a status outside 0..255 is 255.
  const char* first = rep.out.data() + out_at + out_mark.size();
  const char* last = rep.out.data() + nl;
  auto [end, ec] = std::from_chars(first, last, rep.status);
  if (ec != std::errc() || end != last || rep.status < 0 || rep.status > 255) rep.status = 255;
  rep.out.resize(out_at);
  rep.err.resize(err_at);
  return with_summaries();
}

Result<ExecResult> PythonDriver::Execute(const std::string& code, const std::string& stdin_data,
                                         uint64_t timeout_ms, uint64_t output_cap) {
  ExecResult r;
  r.execution_id = NewExecutionId();
  r.backend = session_.backend().name();
  BoxVerdict before = session_.box().Verdict();
  auto start = Clock::now();
  std::string header = "X " + std::to_string(code.size()) + " " + std::to_string(stdin_data.size()) + "\n";
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(header, code, stdin_data, timeout_ms, output_cap));
  r.duration_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  OutputBudget budget(output_cap);
  budget.Append(r.stdout_data, rep.out, &r.truncated);
  budget.Append(r.stderr_data, rep.err, &r.truncated);
  r.alerts = std::move(rep.events);
  if (rep.deadline) {
    r.status = ExecStatus::kTimeout;
    r.exit_code = protocol::kTimeoutExitCode;
    r.signal = 9;
    r.alerts.push_back(TimeoutAlert(timeout_ms, r.duration_ms));
    r.alerts.push_back(SessionAlert("the interpreter was killed at the timeout; the next execution starts a fresh one (variables are lost, files are kept)", r.duration_ms));
  } else if (rep.over_cap) {
    r.status = ExecStatus::kOutputLimit;
    r.exit_code = 137;
    r.signal = 9;
    r.truncated = true;
    r.alerts.push_back(SessionAlert("the interpreter was killed at the output cap; the next execution starts a fresh one", r.duration_ms));
  } else if (rep.run_ended) {
    ApplyExitReport(rep.exit, r);
    r.duration_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    r.cpu_ms = 0;  // the report covers the driver's whole life: use the box's delta instead
    r.alerts.push_back(SessionAlert("the interpreter ended (" + std::string(protocol::Name(rep.exit.status)) + ", exit " +
                                        std::to_string(rep.exit.exit_code) +
                                        "); the next execution starts a fresh one",
                                    r.duration_ms));
  } else {
    r.exit_code = rep.status;
    r.status = rep.status == 0 ? ExecStatus::kOk : ExecStatus::kError;
  }
  ApplyVerdict(before, session_.box().Verdict(), session_.policy(), r);
  return r;
}

Result<FileOpResult> PythonDriver::WriteFile(const std::string& path, const std::string& data) {
  std::string header = "W " + std::to_string(path.size()) + " " + std::to_string(data.size()) + "\n";
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(header, path, data, 30000, 64 << 10));
  FileOpResult f;
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{"the file helper in the box ended before writing " + path};
  f.status = static_cast<FileOpStatus>(rep.status);
  f.message = rep.err;
  return f;
}

Result<FileOpResult> PythonDriver::ReadFile(const std::string& path, uint64_t max_bytes) {
  std::string header = "R " + std::to_string(path.size()) + " " + std::to_string(max_bytes) + "\n";
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(header, path, "", 30000, max_bytes + (64 << 10)));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{"the file helper in the box ended before reading " + path};
  FileOpResult f;
  f.status = static_cast<FileOpStatus>(rep.status);
  f.message = rep.err;
  if (f.status == FileOpStatus::kOk) f.data = std::move(rep.out);
  return f;
}

Result<FileOpResult> PythonDriver::RecordOp(char op, const std::string& first, const std::string& second,
                                            uint64_t timeout_ms, uint64_t reply_cap) {
  std::string header = std::string(1, op) + " " + std::to_string(first.size()) + " " + std::to_string(second.size()) + "\n";
  LSB_ASSIGN_OR_RETURN(Reply rep, Send(header, first, second, timeout_ms, reply_cap + (64 << 10)));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{std::string("the file helper in the box ended before it finished (") +
                 (rep.deadline ? "out of time" : rep.over_cap ? "it sent more than the bound" : "it exited") + ")"};
  FileOpResult f;
  f.status = static_cast<FileOpStatus>(rep.status);
  f.message = rep.err;
  if (f.status == FileOpStatus::kOk) f.data = std::move(rep.out);
  return f;
}

}  // namespace lsb::sched

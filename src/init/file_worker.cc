#include "init/file_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/reset_signals.h"
#include "base/unique_fd.h"
#include "init/confine.h"
#include "init/file_ops.h"
#include "init/run_loop.h"
#include "init/seccomp_filter.h"

namespace lsb::init {

using protocol::FileOp;
using protocol::FileReply;
using protocol::FileStatus;
using protocol::FrameType;

namespace {

constexpr uint64_t kMaxOpTimeoutMs = 10 * 60 * 1000;

// In the child: the program's confinement, in its order (confine.cc), without the program's
// stdio, hand-off socket and watch. Returns the step that failed (errno set) or nullptr.
}  // namespace

const char* ConfineFileWorker(const WorkerIdentity& who) {
  ResetSignals();
  rlimit nofile{64, 64}, core{0, 0};
  if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0 || ::setrlimit(RLIMIT_CORE, &core) != 0) return "setrlimit";
  int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    (void)!::write(oom, "1000", 4);  // the worker goes before init at the memory limit
    ::close(oom);
  }
  if (const char* step = TakeProgramIds(who.uid, who.gid)) return step;
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return "PR_SET_DUMPABLE";
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "PR_SET_NO_NEW_PRIVS";
  if (who.ruleset_fd >= 0 && ::syscall(SYS_landlock_restrict_self, who.ruleset_fd, 0) != 0)
    return "landlock_restrict_self";
  if (who.escape && LoadSeccompProgram(*who.escape, false) < 0) return "seccomp: load the escape filter";
  // Nothing of init's (its stream, the ruleset) stays open in the worker; the pipes are 0 and 1.
  if (::syscall(SYS_close_range, 3u, ~0u, 0) != 0)
    for (int fd = 3; fd < (1 << 16); ++fd) (void)::close(fd);  // gVisor: no close_range
  ::umask(022);
  return nullptr;
}

namespace {

[[noreturn]] void WorkerMain(const FileOp& op, const WorkerIdentity& who, int in, int out) {
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0) ::_exit(1);  // init then says it ended without a reply
  ReplyWriter reply(1);
  if (const char* step = ConfineFileWorker(who)) {
    FileReply r{FileStatus::kFailed, std::string("the file worker could not be confined (") + step + "): " +
                                         std::strerror(errno), errno, {}, false, 0};
    (void)reply.Finish(r);
    ::_exit(1);
  }
  InputReader input(0);
  (void)reply.Finish(DoFileOp(op, input, reply));
  ::_exit(0);
}

// Writes `data` into the worker's non-blocking stdin before `deadline`; false when the worker
// stopped reading (it failed, or the time is up): the rest is dropped.
bool FeedWorker(int fd, std::string_view data, uint64_t deadline) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    const uint64_t now = MonotonicMs();
    if (now >= deadline) return false;
    pollfd p{fd, POLLOUT, 0};
    (void)::poll(&p, 1, static_cast<int>(deadline - now));
  }
  return true;
}

// What the relay saw of the worker, for the reply init writes when the worker's own is missing.
struct Relay {
  uint64_t forwarded = 0;
  bool replied = false, over_cap = false, bad_frame = false, timed_out = false;
};

// The worker's frames to the host until its reply, its end, or a bound.
Status RelayWorker(Stream& stream, int out, const FileOp& op, uint64_t deadline, Relay& r) {
  protocol::FrameDecoder dec;
  char buf[64 * 1024];
  for (;;) {
    for (;;) {
      auto f = dec.Next();
      if (!f.ok()) return (r.bad_frame = true, OkStatus());
      if (!*f) break;
      protocol::Frame& fr = **f;
      if (fr.type == FrameType::kFileChunk) {
        if ((r.forwarded += fr.payload.size()) > op.reply_cap) return (r.over_cap = true, OkStatus());
        LSB_TRY(stream.Send(FrameType::kFileChunk, fr.payload));
      } else if (fr.type == FrameType::kFileReply) {
        try {
          (void)protocol::ParseMessage<FileReply>(fr.payload);
        } catch (const std::exception&) {
          return (r.bad_frame = true, OkStatus());
        }
        r.replied = true;
        return stream.Send(FrameType::kFileReply, fr.payload);
      } else {
        return (r.bad_frame = true, OkStatus());
      }
    }
    // The host takes the output at its pace: the worker waits for it (init holds a bounded queue).
    const uint64_t now = MonotonicMs();
    if (now >= deadline) return (r.timed_out = true, OkStatus());
    if (stream.output_paused() && !stream.Drain(static_cast<int>(deadline - now))) {
      if (stream.broken()) return Error::Eof();
      continue;
    }
    pollfd p{out, POLLIN, 0};
    int k = ::poll(&p, 1, static_cast<int>(std::min<uint64_t>(deadline - now, 1000)));
    if (k <= 0) continue;
    ssize_t n = ::read(out, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return OkStatus();  // ended without a reply
    dec.Feed(std::string_view(buf, static_cast<size_t>(n)));
  }
}

FileReply BrokenReply(const Relay& r, const FileOp& op, int wait_status) {
  FileReply f;
  f.status = FileStatus::kFailed;
  if (r.timed_out) {
    f.message = std::string(protocol::Name(op.op)) + " " + op.path + ": timed out after " +
                std::to_string(op.timeout_ms) + " ms";
  } else if (r.over_cap) {
    f.status = FileStatus::kTooLarge;
    f.message = std::string(protocol::Name(op.op)) + " " + op.path + ": the reply passed its bound of " +
                std::to_string(op.reply_cap) + " bytes";
  } else if (r.bad_frame) {
    f.message = "the file worker sent a malformed frame";
  } else {
    f.message = "the file worker ended without a reply (" +
                (WIFSIGNALED(wait_status) ? "signal " + std::to_string(WTERMSIG(wait_status))
                                          : "exit " + std::to_string(WEXITSTATUS(wait_status))) + ")";
  }
  return f;
}

// The kFileData frames of the op, into the worker (or dropped once it stopped reading, or when
// there is none: `in` -1).
Status CopyInput(Stream& stream, const FileOp& op, int in, uint64_t deadline, bool* ok) {
  *ok = in >= 0;
  for (uint64_t left = op.data_bytes; left > 0;) {
    LSB_ASSIGN_OR_RETURN(protocol::Frame f, stream.Read());
    if (f.type != FrameType::kFileData || f.payload.size() > left) {
      *ok = false;  // the host broke the op's framing: nothing more of it can be trusted
      return Error{std::string("protocol: a file op's input expected, got ") + protocol::FrameTypeName(f.type)};
    }
    left -= f.payload.size();
    if (*ok) *ok = FeedWorker(in, f.payload, deadline);
  }
  return OkStatus();
}

}  // namespace

Status ServeFileOp(Stream& stream, const std::string& payload, const WorkerIdentity& who) {
  FileOp op;
  try {
    op = protocol::ParseMessage<FileOp>(payload);
  } catch (const std::exception& e) {
    // Its input cannot be told apart from what follows: the stream is unusable.
    return Error{std::string("protocol: bad FileOp: ") + e.what()};
  }
  const uint64_t deadline = MonotonicMs() + std::min<uint64_t>(op.timeout_ms ? op.timeout_ms : 1, kMaxOpTimeoutMs);
  // No worker (the box at its pids or descriptor limit: the program's doing): the op fails, the
  // stream and the box go on.
  auto no_worker = [&](const char* what) -> Status {
    const int err = errno;
    bool unused = false;
    LSB_TRY(CopyInput(stream, op, -1, deadline, &unused));
    FileReply r{FileStatus::kFailed, std::string(what) + ": " + std::strerror(err), err, {}, false, 0};
    return stream.SendJson(FrameType::kFileReply, r);
  };
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return no_worker("no pipe for the file worker");
  UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return no_worker("no pipe for the file worker");
  UniqueFd out_r(out[0]), out_w(out[1]);
  pid_t pid = ::fork();
  if (pid < 0) return no_worker("the file worker could not be started (the box's process limit?)");
  if (pid == 0) WorkerMain(op, who, in_r.get(), out_w.get());
  in_r.reset();
  out_w.reset();
  ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  bool fed = true;
  Status st = CopyInput(stream, op, in_w.get(), deadline, &fed);
  in_w.reset();
  Relay relay;
  if (st.ok()) st = RelayWorker(stream, out_r.get(), op, deadline, relay);
  if (!relay.replied) ::kill(pid, SIGKILL);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!st.ok()) return st;
  if (!relay.replied) return stream.SendJson(FrameType::kFileReply, BrokenReply(relay, op, ws));
  return OkStatus();
}

}  // namespace lsb::init

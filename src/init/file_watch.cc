#include "init/file_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/io.h"
#include "init/box_path.h"
#include "protocol/messages.h"

namespace lsb::init {

using protocol::FileEvent;
using protocol::FrameType;

namespace {

constexpr uint32_t kMask = IN_CREATE | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
                           IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;

const char* OpOf(uint32_t mask) {
  if (mask & IN_Q_OVERFLOW) return "overflow";
  if (mask & IN_CREATE) return "create";
  if (mask & IN_CLOSE_WRITE) return "write";
  if (mask & IN_DELETE) return "remove";
  if (mask & (IN_MOVED_FROM | IN_MOVED_TO)) return "rename";
  if (mask & IN_ATTRIB) return "chmod";
  return nullptr;
}

void Send(int out, const FileEvent& e) {
  if (!WriteAll(out, protocol::EncodeFrame(FrameType::kFileEvent, nlohmann::json(e).dump())).ok()) ::_exit(0);
}

// The watcher's state: one inotify instance, its directories by watch descriptor.
struct Watcher {
  int ino = -1;
  int out = 1;
  bool recursive = false;
  std::map<int, std::string> dirs;

  // `path` and (recursive) the directories under it, no link followed, at most kMaxWatchDirs.
  void Add(const std::string& path) {
    if (dirs.size() >= protocol::kMaxWatchDirs) {
      Send(out, {path, "overflow", true});  // not watched: past the bound
      return;
    }
    if (!OpenBoxDir(path, false).ok()) return;  // a link on the way, or gone
    int wd = ::inotify_add_watch(ino, path.c_str(), kMask);
    if (wd < 0) return;
    dirs[wd] = path;
    if (!recursive) return;
    DIR* d = ::opendir(path.c_str());
    if (!d) return;
    std::vector<std::string> subdirs;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && e->d_type == DT_DIR) subdirs.push_back(path == "/" ? "/" + n : path + "/" + n);
    }
    ::closedir(d);
    for (const auto& s : subdirs) Add(s);
  }

  void Serve(const inotify_event& ev, const std::string& root) {
    auto it = dirs.find(ev.wd);
    if (ev.mask & IN_Q_OVERFLOW) return Send(out, {root, "overflow", true});
    if (it == dirs.end()) return;
    if (ev.mask & (IN_DELETE_SELF | IN_IGNORED)) {
      const bool top = it->second == root;
      dirs.erase(it);
      if (top) {
        Send(out, {root + ": the watched directory is gone", "end", true});
        ::_exit(0);
      }
      return;
    }
    const char* op = OpOf(ev.mask);
    if (!op || ev.len == 0) return;
    std::string path = (it->second == "/" ? "" : it->second) + "/" + ev.name;
    const bool dir = ev.mask & IN_ISDIR;
    Send(out, {path, op, dir});
    if (recursive && dir && (ev.mask & (IN_CREATE | IN_MOVED_TO))) Add(path);
  }
};

}  // namespace

void WatcherMain(const protocol::WatchSpec& spec, const WorkerIdentity& who, int out) {
  if (::dup2(out, 1) < 0) ::_exit(1);
  ::close(0);
  if (const char* step = ConfineFileWorker(who)) {
    Send(1, {std::string("the watcher could not be confined (") + step + "): " + std::strerror(errno), "end", true});
    ::_exit(1);
  }
  Watcher w;
  w.recursive = spec.recursive;
  w.ino = ::inotify_init1(IN_CLOEXEC);
  if (w.ino >= 0) w.Add(spec.path);
  if (w.dirs.empty()) {
    Send(1, {spec.path + ": not a directory that can be watched (missing, a link on the way, or no inotify)", "end",
             true});
    ::_exit(1);
  }
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(w.ino, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(1);
    for (ssize_t at = 0; at < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      w.Serve(*ev, spec.path);
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

void ServeWatchFrame(FileWatch& watch, const protocol::Frame& frame, const WorkerIdentity& who) {
  if (frame.type == FrameType::kUnwatch) return watch.Stop();
  protocol::WatchSpec spec;
  try {
    spec = protocol::ParseMessage<protocol::WatchSpec>(frame.payload);
  } catch (const std::exception& e) {
    spec.path = std::string("bad WatchSpec: ") + e.what();  // Start refuses it as a path: an "end"
  }
  watch.Start(std::move(spec), who);
}

void FileWatch::Start(protocol::WatchSpec spec, const WorkerIdentity& who) {
  Stop();
  spec_ = spec;
  if (auto st = CheckBoxPath(spec.path); !st.ok()) {
    Event(st.error().message, "end");
    spec_.reset();
    return;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Event("no pipe for the watcher: " + std::string(std::strerror(errno)), "end");
  UniqueFd r(p[0]), w(p[1]);
  pid_ = ::fork();
  if (pid_ < 0) return Event("the watcher could not be started: " + std::string(std::strerror(errno)), "end");
  if (pid_ == 0) WatcherMain(spec, who, w.get());
  pipe_ = std::move(r);
  ::fcntl(pipe_.get(), F_SETFL, O_NONBLOCK);
  decoder_ = protocol::FrameDecoder{};
}

void FileWatch::Stop() {
  spec_.reset();
  Reap();
}

void FileWatch::Reap() {
  pipe_.reset();
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

void FileWatch::Revive(const WorkerIdentity& who) {
  if (!spec_ || (pid_ > 0 && ::kill(pid_, 0) == 0)) return;  // no watch, or its watcher lives
  Start(*spec_, who);  // a copy: Start replaces spec_
}

void FileWatch::Event(const std::string& path, const std::string& op) {
  if (!stream_.OfferJson(FrameType::kFileEvent, FileEvent{path, op, true})) ++dropped_;
}

void FileWatch::OnReadable() {
  char buf[16 * 1024];
  ssize_t n = ::read(pipe_.get(), buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {  // the watcher ended (its directory went, or a run's end killed it)
    Reap();
    return;
  }
  decoder_.Feed(std::string_view(buf, static_cast<size_t>(n)));
  for (;;) {
    auto f = decoder_.Next();
    if (!f.ok()) return Reap();  // a broken watcher: no more of its bytes are read
    if (!*f) break;
    if ((*f)->type != FrameType::kFileEvent) return Reap();
    if (dropped_ > 0 && stream_.OfferJson(FrameType::kFileEvent, FileEvent{spec_ ? spec_->path : "", "overflow", true}))
      dropped_ = 0;
    if (!stream_.Offer(FrameType::kFileEvent, (*f)->payload)) ++dropped_;
  }
}

}  // namespace lsb::init

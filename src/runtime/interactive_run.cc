#include "runtime/interactive_run.h"

#include <nlohmann/json.hpp>

namespace lsb {
namespace {

using protocol::FrameType;

template <typename T>
Result<T> ParsePayload(const std::string& payload, const char* what) {
  try {
    return protocol::ParseMessage<T>(payload);
  } catch (const std::exception& e) {
    return Error{std::string("protocol: bad ") + what + " from llm-sandbox-init: " + e.what()};
  }
}

}  // namespace

Result<std::unique_ptr<InteractiveRun>> InteractiveRun::Start(BoxSession& session,
                                                              protocol::RunSpec spec,
                                                              std::string_view code) {
  if (!session.usable()) return Error{"this sandbox session can no longer run programs (its box was killed or broke)"};
  if (code.size() > protocol::kMaxFramePayload) return Error{"the program is larger than one frame (1 MiB)"};
  spec.stdin_follows = true;
  std::unique_ptr<InteractiveRun> run(new InteractiveRun(session));
  session.channel().Queue(FrameType::kRun, nlohmann::json(spec).dump());
  session.channel().Queue(FrameType::kCode, code);
  LSB_TRY(session.EnsureReady());
  return run;
}

InteractiveRun::~InteractiveRun() = default;

void InteractiveRun::SendStdin(std::string_view bytes) {
  if (!exited_ && !bytes.empty()) session_.channel().QueueChunked(FrameType::kStdin, bytes);
}

void InteractiveRun::CloseStdin() {
  if (!exited_) session_.channel().Queue(FrameType::kStdinEof, "");
}

void InteractiveRun::Kill() {
  if (!exited_) session_.channel().Queue(FrameType::kKill, "");
}

void InteractiveRun::Preempt() {
  if (!exited_) session_.channel().Queue(FrameType::kPreempt, "");
}

Result<InteractiveRun::Piece> InteractiveRun::Next(Clock::time_point deadline) {
  for (;;) {
    auto f = session_.channel().Next(deadline);
    if (!f.ok()) {
      session_.MarkUnusable();
      return Error{"llm-sandbox-init ended during the run (" +
                   (f.error().IsEof() ? std::string("the stream ended") : f.error().message) + ")"};
    }
    Piece p;
    if (!*f) return p;  // kDeadline
    protocol::Frame& fr = **f;
    switch (fr.type) {
      case FrameType::kStdout:
      case FrameType::kStderr:
        p.kind = fr.type == FrameType::kStdout ? Piece::Kind::kStdout : Piece::Kind::kStderr;
        p.data = std::move(fr.payload);
        return p;
      case FrameType::kEvent: {
        LSB_ASSIGN_OR_RETURN(p.event, ParsePayload<protocol::Event>(fr.payload, "event"));
        p.kind = Piece::Kind::kEvent;
        return p;
      }
      case FrameType::kExit: {
        LSB_ASSIGN_OR_RETURN(p.exit, ParsePayload<protocol::ExitReport>(fr.payload, "exit report"));
        p.kind = Piece::Kind::kExit;
        exited_ = true;
        return p;
      }
      case FrameType::kError: {
        LSB_ASSIGN_OR_RETURN(auto err, ParsePayload<protocol::InitError>(fr.payload, "error"));
        exited_ = true;
        const std::string stage = protocol::Name(err.stage);
        if (err.stage == protocol::ErrorStage::kRun || err.stage == protocol::ErrorStage::kProtocol)
          return Error{"the sandbox could not run the program (llm-sandbox-init, " + stage + "): " + err.message,
                       err.sys_errno};
        session_.MarkUnusable();
        return Error{"llm-sandbox-init failed (" + stage + "): " + err.message, err.sys_errno};
      }
      case FrameType::kFileEvent:
        session_.DeliverFileEvent(fr);
        break;
      default:
        break;  // not a run's frame: ignore
    }
  }
}

}  // namespace lsb

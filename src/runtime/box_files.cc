#include "runtime/box_files.h"

#include <chrono>

#include <nlohmann/json.hpp>

namespace lsb {

using protocol::FrameType;

namespace {

constexpr std::chrono::milliseconds kGrace{5000};

}  // namespace

Result<FileCall> CallFileOp(BoxSession& session, protocol::FileOp op, std::string_view input) {
  if (!session.usable()) return Error{"this sandbox's box was killed or broke: its files cannot be reached"};
  LSB_TRY(session.EnsureReady());
  op.data_bytes = input.size();
  FrameChannel& ch = session.channel();
  ch.Queue(FrameType::kFileOp, nlohmann::json(op).dump());
  if (!input.empty()) ch.QueueChunked(FrameType::kFileData, input, 1u << 20);
  const auto deadline = FrameChannel::Clock::now() + std::chrono::milliseconds(op.timeout_ms) + kGrace;
  FileCall call;
  std::vector<protocol::Frame> others;  // a run's frames meanwhile: handed back once the op is over
  size_t others_bytes = 0;
  auto broken = [&](std::string why) {
    session.MarkUnusable();
    return Error{"file " + std::string(protocol::Name(op.op)) + " " + op.path + ": " + why};
  };
  for (;;) {
    auto f = ch.Next(deadline);
    if (!f.ok()) return broken("the box's init ended (" + f.error().message + ")");
    if (!*f) return broken("init did not answer within " + std::to_string(op.timeout_ms) + " ms");
    protocol::Frame& fr = **f;
    if (fr.type == FrameType::kFileChunk) {
      if (call.data.size() + fr.payload.size() > op.reply_cap) return broken("the answer passed its bound");
      call.data += fr.payload;
    } else if (fr.type == FrameType::kFileReply) {
      try {
        call.reply = protocol::ParseMessage<protocol::FileReply>(fr.payload);
      } catch (const std::exception& e) {
        return broken(std::string("a malformed reply: ") + e.what());
      }
      break;
    } else if (fr.type == FrameType::kFileEvent) {
      session.DeliverFileEvent(fr);
    } else if (others_bytes + fr.payload.size() <= FrameChannel::kMaxHeldBytes || fr.type == FrameType::kExit ||
               fr.type == FrameType::kError) {
      others_bytes += fr.payload.size();
      others.push_back(std::move(fr));
    }
  }
  for (auto& fr : others) ch.Hold(std::move(fr));
  return call;
}

Status WatchBox(BoxSession& session, const protocol::WatchSpec* spec) {
  if (!session.usable()) return Error{"this sandbox's box was killed or broke: its files cannot be watched"};
  LSB_TRY(session.EnsureReady());
  if (spec) session.channel().Queue(FrameType::kWatch, nlohmann::json(*spec).dump());
  else session.channel().Queue(FrameType::kUnwatch, "");
  return session.channel().Flush(FrameChannel::Clock::now() + kGrace);
}

Status DrainFileEvents(BoxSession& session, std::chrono::milliseconds within) {
  if (!session.usable()) return OkStatus();
  FrameChannel& ch = session.channel();
  const auto deadline = FrameChannel::Clock::now() + within;
  std::vector<protocol::Frame> others;  // a live run's frames: kept for its reader, in order
  Status st = OkStatus();
  for (;;) {
    auto f = ch.Next(deadline);
    if (!f.ok()) {
      session.MarkUnusable();
      st = Error{"the box's init ended (" + f.error().message + ")"};
      break;
    }
    if (!*f) break;
    if ((*f)->type == FrameType::kFileEvent) session.DeliverFileEvent(**f);
    else others.push_back(std::move(**f));
    if (others.size() >= 1024) break;  // a run's output is flowing: its reader will take it
  }
  for (auto& fr : others) ch.Hold(std::move(fr));
  return st;
}

}  // namespace lsb

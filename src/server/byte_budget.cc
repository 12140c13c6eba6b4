#include "server/byte_budget.h"

#include <malloc.h>

#include <cstdio>

namespace lsb::server {

Reservation& Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    Release();
    budget_ = o.budget_;
    bytes_ = o.bytes_;
    o.budget_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Reservation::ShrinkTo(uint64_t bytes) {
  if (!budget_ || bytes >= bytes_) return;
  budget_->Give(bytes_ - bytes);
  bytes_ = bytes;
}

void Reservation::Release() {
  if (budget_ && bytes_) budget_->Give(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

uint64_t ByteBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

void ByteBudget::Give(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_ -= bytes;
  }
  freed_.notify_all();
  if (bytes >= kTrimAtBytes) ReturnFreedMemory();
}

void ReturnFreedMemory() {
  // glibc keeps what a thread freed in that thread's arena; a budget only bounds the host's memory
  // if what a request released is given back, not parked in the arena of whichever worker ran it.
  ::malloc_trim(0);
}

Result<Reservation> ByteBudget::Reserve(uint64_t bytes, const std::string& what) {
  if (total_ == 0) return Reservation();
  bytes = Clamp(bytes);
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  waiting_.push_back(ticket);
  const bool got = freed_.wait_for(lock, max_wait_, [&] { return waiting_.front() == ticket && total_ - used_ >= bytes; });
  waiting_.remove(ticket);
  freed_.notify_all();  // the next in line may fit now
  if (!got)
    return Error{ErrorCode::kResourceExhausted,
                 what + " needs up to " + ByteText(bytes) + " of the daemon's fan-out memory budget (" +
                     ByteText(total_) + ", " + ByteText(total_ - used_) + " free after waiting " +
                     std::to_string(max_wait_.count() / 1000) +
                     " s: other forks, batches, pauses or resumes hold the rest); retry later, or raise "
                     "serve --fanout-budget"};
  used_ += bytes;
  return Reservation(this, bytes);
}

std::optional<Reservation> ByteBudget::TryReserve(uint64_t bytes) {
  if (total_ == 0) return Reservation();
  bytes = Clamp(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (!waiting_.empty() || total_ - used_ < bytes) return std::nullopt;
  used_ += bytes;
  return Reservation(this, bytes);
}

std::string ByteText(uint64_t bytes) {
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1ull << 20)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return buf;
  }
  return std::to_string(bytes) + " bytes";
}

}  // namespace lsb::server

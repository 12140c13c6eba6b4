// Errors as values. An Error carries a kind (ErrorCode, what callers branch on), a human message
// (what failed, with context, and how to fix it where we know), the errno that caused it, if any,
// and the field at fault, if one is. Result<T> is either a T or an Error. Code decides by kind and
// field, never by the message text: the message is for people and may be reworded freely.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace lsb {

// A small, closed set (as leveldb's Status::Code): add one only when some caller branches on it.
enum class ErrorCode {
  kUnknown,            // not classified (the default for a plain message)
  kInvalidArgument,    // the input is wrong; `field` names it where one is at fault
  kNotFound,           // ENOENT, an unknown name
  kPermissionDenied,   // EPERM/EACCES, or a request that would loosen its policy
  kResourceExhausted,  // ENOMEM, ENOSPC, EMFILE, ...: a limit or a full disk
  kTimeout,            // a deadline passed
  kCancelled,          // a signal or a gone client stopped the work (frame_channel.h)
  kEof,                // the peer closed the stream cleanly, at a frame boundary
  kUnavailable,        // the other side is not there (ECONNREFUSED, ...), retry later
  kIo,                 // another failed system call (sys_errno says which)
};

inline const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnknown: return "unknown";
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kPermissionDenied: return "permission_denied";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kEof: return "eof";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kIo: return "io";
  }
  return "unknown";
}

// The kind a failed system call's errno means: ENOENT -> kNotFound, EACCES -> kPermissionDenied...
inline ErrorCode CodeOfErrno(int err) {
  switch (err) {
    case ENOENT: case ESRCH: return ErrorCode::kNotFound;
    case EPERM: case EACCES: return ErrorCode::kPermissionDenied;
    case ENOMEM: case ENOSPC: case EDQUOT: case EMFILE: case ENFILE: case EFBIG: return ErrorCode::kResourceExhausted;
    case ETIMEDOUT: return ErrorCode::kTimeout;
    case ECONNREFUSED: return ErrorCode::kUnavailable;
    default: return ErrorCode::kIo;
  }
}

struct Error {
  std::string message;
  int sys_errno = 0;  // 0 when the failure is not a system call's
  ErrorCode code = ErrorCode::kUnknown;
  std::string field;  // the input field at fault ("resources.memory", "env.PATH"), or empty

  Error() = default;
  // A plain message; with an errno its kind comes from the errno (CodeOfErrno), else kUnknown.
  explicit Error(std::string msg, int err = 0)
      : message(std::move(msg)), sys_errno(err), code(err ? CodeOfErrno(err) : ErrorCode::kUnknown) {}
  Error(ErrorCode c, std::string msg, std::string at_field = "", int err = 0)
      : message(std::move(msg)), sys_errno(err), code(c), field(std::move(at_field)) {}

  // "what: strerror(errno)" for a failed system call; errno is read at construction.
  static Error FromErrno(std::string what, int err = errno) { return Error{what + ": " + std::strerror(err), err}; }
  // A clean end of stream. The message stays "eof" for logs; callers test IsEof().
  static Error Eof() { return Error{ErrorCode::kEof, "eof"}; }
  static Error Cancelled() { return Error{ErrorCode::kCancelled, "cancelled"}; }
  // `field` is the input at fault; `msg` is the whole text a user reads (it names the field too).
  static Error InvalidArgument(std::string at_field, std::string msg) {
    return Error{ErrorCode::kInvalidArgument, std::move(msg), std::move(at_field)};
  }
  static Error PermissionDenied(std::string at_field, std::string msg) {
    return Error{ErrorCode::kPermissionDenied, std::move(msg), std::move(at_field)};
  }

  bool IsEof() const { return code == ErrorCode::kEof; }
  bool IsCancelled() const { return code == ErrorCode::kCancelled; }
  bool IsInvalidArgument() const { return code == ErrorCode::kInvalidArgument; }
  bool IsPermissionDenied() const { return code == ErrorCode::kPermissionDenied; }
  bool IsNotFound() const { return code == ErrorCode::kNotFound; }
  bool IsTimeout() const { return code == ErrorCode::kTimeout; }

  // Prefixes context, so a low-level message reads as a path: "start box: mount /proc: EPERM".
  // The kind, errno and field stay: wrapping adds words, not a different failure.
  Error Wrap(const std::string& context) const { return Error{code, context + ": " + message, field, sys_errno}; }
  // The same kind and field with a new message (a caller rewording a lower layer's error).
  Error WithMessage(std::string msg) const { return Error{code, std::move(msg), field, sys_errno}; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success carries nothing.
struct Ok {};
using Status = Result<Ok>;
inline Status OkStatus() { return Ok{}; }

}  // namespace lsb

// Propagates an error from an expression returning Result<...>; evaluates to nothing.
#define LSB_TRY(expr)                                          \
  do {                                                         \
    auto lsb_try_result_ = (expr);                             \
    if (!lsb_try_result_.ok()) return lsb_try_result_.error(); \
  } while (0)

#define LSB_CONCAT_INNER(a, b) a##b
#define LSB_CONCAT(a, b) LSB_CONCAT_INNER(a, b)
// LSB_ASSIGN_OR_RETURN(auto x, Foo()); declares x from a Result or returns its error.
#define LSB_ASSIGN_OR_RETURN(decl, expr)                               \
  auto LSB_CONCAT(lsb_res_, __LINE__) = (expr);                        \
  if (!LSB_CONCAT(lsb_res_, __LINE__).ok())                            \
    return LSB_CONCAT(lsb_res_, __LINE__).error();                     \
  decl = std::move(LSB_CONCAT(lsb_res_, __LINE__)).value()

// Errors as values. An Error carries a human message (what failed, with context, and how to fix it
// where we know) and the errno that caused it, if any. Result<T> is either a T or an Error.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace lsb {

struct Error {
  std::string message;
  int sys_errno = 0;  // 0 when the failure is not a system call's

  // "what: strerror(errno)" for a failed system call; errno is read at construction.
  static Error FromErrno(std::string what, int err = errno) {
    return Error{what + ": " + std::strerror(err), err};
  }
  // Prefixes context, so a low-level message reads as a path: "start box: mount /proc: EPERM".
  Error Wrap(const std::string& context) const { return Error{context + ": " + message, sys_errno}; }
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

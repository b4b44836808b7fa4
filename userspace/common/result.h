// Result<T>: recoverable errors as values (docs/design.md, "Errors").
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpuobs {

struct Error {
  std::string message;  // lower-case: what failed, on what, and the errno text
  std::string hint;     // how to fix it, when known
  int exit_code = 1;    // what a CLI should exit with
  // The file is damaged (SQLite's corruption codes, a failed quick_check):
  // `gpuobs check` says "corrupt" and exits 1 where others exit 2.
  bool corrupt = false;
};

inline Error make_error(std::string message, std::string hint = {}, int exit_code = 1) {
  return Error{std::move(message), std::move(hint), exit_code};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error err) : v_(std::move(err)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? std::get<0>(v_) : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error err) : err_(std::move(err)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace gpuobs

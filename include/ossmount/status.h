// Status and Result<T>: how every module of ossmount reports errors.
//
// No exception crosses a module boundary. A function that can fail returns a Status (or a
// Result<T> holding either a value or a non-OK Status). A Status carries:
//   - a code that says what kind of failure it is (and maps to an errno for FUSE),
//   - a human message that says what went wrong and, where known, what to do about it,
//   - whether retrying the same request may succeed,
//   - for failures reported by an object server: the HTTP status, the service error code,
//     the request id and the OSS error-center code (EC), for the log.
// Messages never contain secrets (access key secrets, security tokens, signatures).
//
// Thread-safety: Status and Result are values; distinct objects may be used from any thread.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ossmount {

enum class ErrorCode {
  kOk = 0,
  kNotFound,               // NoSuchKey, 404 on HEAD, missing path. errno ENOENT.
  kNoSuchBucket,           // The bucket does not exist at this endpoint. ENOENT.
  kAccessDenied,           // AccessDenied (policy, or wrong region). EACCES.
  kInvalidAccessKeyId,     // The access key id is unknown or disabled. EACCES.
  kSignatureDoesNotMatch,  // Wrong secret, or a signing bug. EACCES.
  kRequestTimeTooSkewed,   // Local clock more than 15 minutes off. EACCES.
  kTokenExpired,           // STS token expired or invalid. EACCES.
  kPreconditionFailed,     // If-Match failed: the object changed. ESTALE.
  kInvalidRange,           // 416. EINVAL.
  kThrottled,              // 429, SlowDown, QpsLimitExceeded. EAGAIN.
  kServerError,            // 5xx. EIO.
  kNetwork,                // Connection refused/reset, DNS, TLS. EIO.
  kTimeout,                // Connect timeout, stall (low-speed) deadline, retry budget. ETIMEDOUT.
  kIntegrity,              // CRC-64 mismatch, short body, checksum failure. EIO.
  kProtocol,               // Malformed response (bad XML, missing headers). EIO.
  kInvalidArgument,        // Bad input from the caller or the user. EINVAL.
  kNameTooLong,            // A path component over 255 bytes. ENAMETOOLONG.
  kCancelled,              // The caller cancelled the request. ECANCELED.
  kReadOnly,               // Mutation on a read-only mount. EROFS.
  kNotSupported,           // ENOTSUP.
  kNoSpace,                // Cache or memory budget exhausted. ENOSPC.
  kInternal,               // A bug. EIO.
  kAlreadyExists,          // FileAlreadyExists (forbid-overwrite), an existing name. EEXIST.
  kNotEmpty,               // rmdir or rename onto a directory that holds entries. ENOTEMPTY.
  kIsDirectory,            // A file operation on a directory. EISDIR.
  kNotDirectory,           // A directory operation on a file. ENOTDIR.
  kTooBig,                 // Past the service's object size limit. EFBIG.
  kBusy,                   // The file is being written by this mount. EBUSY.
  kCrossDevice,            // A rename the mount will not do in place (copy instead). EXDEV.
  kNotPermitted,           // An operation the file system does not offer (link, symlink). EPERM.
  kNoAttribute,            // No extended attribute by that name. ENODATA.
};

// A stable lowercase name for the code ("not_found", "network", ...), for logs and metrics.
const char* ErrorCodeName(ErrorCode code);

// Details an object server sent with an error response. All optional.
struct ServiceErrorDetails {
  int http_status = 0;
  std::string code;        // e.g. "NoSuchKey"
  std::string request_id;  // x-oss-request-id / x-amz-request-id / <RequestId>
  std::string ec;          // OSS error-center code, e.g. "0026-00000001"
  std::string server_message;
};

class Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message, bool retryable = false)
      : code_(code), message_(std::move(message)), retryable_(retryable) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  bool retryable() const { return retryable_; }

  const ServiceErrorDetails& service() const { return service_; }
  Status& WithService(ServiceErrorDetails details) {
    service_ = std::move(details);
    return *this;
  }
  Status& SetRetryable(bool retryable) {
    retryable_ = retryable;
    return *this;
  }
  // Prepends context: "listing bucket 'b': " + message.
  Status& Prefix(const std::string& context) {
    message_ = context + ": " + message_;
    return *this;
  }

  // The errno a FUSE reply should carry for this status (positive, e.g. ENOENT).
  int ToErrno() const;

  // "not_found: The specified key does not exist. (HTTP 404, NoSuchKey, request id X, EC Y)"
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  bool retryable_ = false;
  ServiceErrorDetails service_;
};

// Either a T or a non-OK Status. Constructing a Result from an OK Status is a bug.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The error, or an OK Status when ok().
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ossmount

#include "ossmount/status.h"

#include <cerrno>

namespace ossmount {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kNoSuchBucket:
      return "no_such_bucket";
    case ErrorCode::kAccessDenied:
      return "access_denied";
    case ErrorCode::kInvalidAccessKeyId:
      return "invalid_access_key_id";
    case ErrorCode::kSignatureDoesNotMatch:
      return "signature_does_not_match";
    case ErrorCode::kRequestTimeTooSkewed:
      return "request_time_too_skewed";
    case ErrorCode::kTokenExpired:
      return "token_expired";
    case ErrorCode::kPreconditionFailed:
      return "precondition_failed";
    case ErrorCode::kInvalidRange:
      return "invalid_range";
    case ErrorCode::kThrottled:
      return "throttled";
    case ErrorCode::kServerError:
      return "server_error";
    case ErrorCode::kNetwork:
      return "network";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kIntegrity:
      return "integrity";
    case ErrorCode::kProtocol:
      return "protocol";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNameTooLong:
      return "name_too_long";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kReadOnly:
      return "read_only";
    case ErrorCode::kNotSupported:
      return "not_supported";
    case ErrorCode::kNoSpace:
      return "no_space";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kAlreadyExists:
      return "already_exists";
    case ErrorCode::kNotEmpty:
      return "not_empty";
    case ErrorCode::kIsDirectory:
      return "is_directory";
    case ErrorCode::kNotDirectory:
      return "not_directory";
    case ErrorCode::kTooBig:
      return "too_big";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kCrossDevice:
      return "cross_device";
    case ErrorCode::kNotPermitted:
      return "not_permitted";
    case ErrorCode::kNoAttribute:
      return "no_attribute";
  }
  return "unknown";
}

int Status::ToErrno() const {
  switch (code_) {
    case ErrorCode::kOk:
      return 0;
    case ErrorCode::kNotFound:
    case ErrorCode::kNoSuchBucket:
      return ENOENT;
    case ErrorCode::kAccessDenied:
    case ErrorCode::kInvalidAccessKeyId:
    case ErrorCode::kSignatureDoesNotMatch:
    case ErrorCode::kRequestTimeTooSkewed:
    case ErrorCode::kTokenExpired:
      return EACCES;
    case ErrorCode::kPreconditionFailed:
      return ESTALE;
    case ErrorCode::kInvalidRange:
    case ErrorCode::kInvalidArgument:
      return EINVAL;
    case ErrorCode::kNameTooLong:
      return ENAMETOOLONG;
    case ErrorCode::kThrottled:
      return EAGAIN;
    case ErrorCode::kTimeout:
      return ETIMEDOUT;
    case ErrorCode::kCancelled:
      return ECANCELED;
    case ErrorCode::kReadOnly:
      return EROFS;
    case ErrorCode::kNotSupported:
      return ENOTSUP;
    case ErrorCode::kNoSpace:
      return ENOSPC;
    case ErrorCode::kAlreadyExists:
      return EEXIST;
    case ErrorCode::kNotEmpty:
      return ENOTEMPTY;
    case ErrorCode::kIsDirectory:
      return EISDIR;
    case ErrorCode::kNotDirectory:
      return ENOTDIR;
    case ErrorCode::kTooBig:
      return EFBIG;
    case ErrorCode::kBusy:
      return EBUSY;
    case ErrorCode::kCrossDevice:
      return EXDEV;
    case ErrorCode::kNotPermitted:
      return EPERM;
    case ErrorCode::kNoAttribute:
      return ENODATA;
    case ErrorCode::kServerError:
    case ErrorCode::kNetwork:
    case ErrorCode::kIntegrity:
    case ErrorCode::kProtocol:
    case ErrorCode::kInternal:
      return EIO;
  }
  return EIO;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = std::string(ErrorCodeName(code_)) + ": " + message_;
  std::string detail;
  auto add = [&detail](const std::string& part) {
    if (!detail.empty()) detail += ", ";
    detail += part;
  };
  if (service_.http_status) add("HTTP " + std::to_string(service_.http_status));
  if (!service_.code.empty()) add(service_.code);
  if (!service_.request_id.empty()) add("request id " + service_.request_id);
  if (!service_.ec.empty()) add("EC " + service_.ec);
  if (!detail.empty()) s += " (" + detail + ")";
  return s;
}

}  // namespace ossmount

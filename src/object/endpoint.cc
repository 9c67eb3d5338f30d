#include "object/endpoint.h"

#include <cctype>

namespace ossmount::object {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsIpv4(std::string_view host) {
  int dots = 0, digits = 0;
  for (char c : host) {
    if (c == '.') {
      if (digits == 0) return false;
      ++dots;
      digits = 0;
    } else if (c >= '0' && c <= '9') {
      if (++digits > 3) return false;
    } else {
      return false;
    }
  }
  return dots == 3 && digits > 0;
}

Status Bad(std::string_view option, std::string_view text, std::string_view why) {
  return Status(ErrorCode::kInvalidArgument,
                std::string(option) + " '" + std::string(text) +
                    "' is not a valid endpoint: " + std::string(why) +
                    " (expected host, host:port, http://host[:port] or https://host[:port])");
}

}  // namespace

Result<Endpoint> ParseEndpoint(std::string_view text, std::string_view option) {
  Endpoint ep;
  std::string_view rest = text;
  std::string lower = Lower(text);
  if (lower.rfind("https://", 0) == 0) {
    ep.scheme = "https";
    rest.remove_prefix(8);
  } else if (lower.rfind("http://", 0) == 0) {
    ep.scheme = "http";
    rest.remove_prefix(7);
  } else if (lower.find("://") != std::string::npos) {
    return Bad(option, text, "only http:// and https:// are supported");
  } else {
    ep.scheme = "https";
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) return Bad(option, text, "no host");
  for (char c : rest) {
    if (c == '/' || c == '?' || c == '#') return Bad(option, text, "it has a path or query");
    if (c == '@') return Bad(option, text, "user info is not allowed");
    if (std::isspace(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) < 0x20) {
      return Bad(option, text, "it contains whitespace or control characters");
    }
  }
  std::string_view host = rest, port;
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return Bad(option, text, "unterminated IPv6 literal");
    host = rest.substr(0, close + 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Bad(option, text, "junk after the IPv6 literal");
      port = after.substr(1);
      if (port.empty()) return Bad(option, text, "empty port");
    }
    ep.ip_literal = true;
  } else {
    size_t colon = rest.find(':');
    if (colon != std::string_view::npos) {
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
      if (port.empty()) return Bad(option, text, "empty port");
    }
    if (host.empty()) return Bad(option, text, "no host");
    for (char c : host) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
        return Bad(option, text, "invalid character in the host name");
      }
    }
    ep.ip_literal = IsIpv4(host) || Lower(host) == "localhost";
  }
  if (!port.empty()) {
    if (port.size() > 5) return Bad(option, text, "bad port");
    long value = 0;
    for (char c : port) {
      if (c < '0' || c > '9') return Bad(option, text, "bad port");
      value = value * 10 + (c - '0');
    }
    if (value < 1 || value > 65535) return Bad(option, text, "port out of range");
  }
  ep.host = Lower(rest);
  return ep;
}

Status ValidateBucketName(std::string_view bucket, Protocol protocol) {
  auto bad = [&](std::string_view why) {
    return Status(ErrorCode::kInvalidArgument,
                  "bucket name '" + std::string(bucket) + "' is not valid: " + std::string(why));
  };
  if (bucket.size() < 3 || bucket.size() > 63) return bad("it must be 3 to 63 characters long");
  for (char c : bucket) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (protocol == Protocol::kS3) ok = ok || c == '.' || c == '_' || (c >= 'A' && c <= 'Z');
    if (!ok) {
      return bad(protocol == Protocol::kOss
                     ? "OSS bucket names use only lowercase letters, digits and '-'"
                     : "S3 bucket names use only letters, digits, '.', '_' and '-'");
    }
  }
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(bucket.front()) || !alnum(bucket.back())) {
    return bad("it must start and end with a letter or digit");
  }
  return Status::Ok();
}

}  // namespace ossmount::object

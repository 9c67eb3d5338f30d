// Response: what the session writes for one request. The body is a slice of a shared
// in-memory buffer, or a byte range of a file streamed from disk, or nothing (HEAD: the
// Content-Length still describes the object).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ossmount::testserver {

struct Response {
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<const std::string> body;  // when set, bytes [body_offset, +body_length)
  std::string file_path;                    // when body is null and body_length > 0
  uint64_t body_offset = 0;
  uint64_t body_length = 0;
  bool omit_body = false;  // HEAD: send Content-Length: body_length but no bytes
  bool close = false;      // close the connection after this response
  // Malformed responses (fault injection) only: the Content-Length to declare instead of
  // body_length, or none at all (the body then ends when the connection closes).
  std::optional<uint64_t> declared_length;
  bool no_content_length = false;

  void Add(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
  void SetText(std::string text, std::string content_type) {
    body_length = text.size();
    body_offset = 0;
    body = std::make_shared<const std::string>(std::move(text));
    Add("Content-Type", std::move(content_type));
  }
};

// "HTTP/1.1 <status> <reason>\r\n" + headers + Content-Length (not on 204/304) +
// Connection + "\r\n".
std::string SerializeHead(const Response& r, bool keep_alive);

}  // namespace ossmount::testserver

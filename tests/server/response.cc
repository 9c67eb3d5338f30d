#include "response.h"

#include <boost/beast/http/status.hpp>

namespace ossmount::testserver {

std::string SerializeHead(const Response& r, bool keep_alive) {
  std::string out;
  out.reserve(512);
  out += "HTTP/1.1 ";
  out += std::to_string(r.status);
  out += ' ';
  out += std::string(
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(r.status)));
  out += "\r\n";
  for (const auto& [name, value] : r.headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  // RFC 9110 §8.6: no Content-Length on 204 and 304 (their body is always empty).
  if (r.status != 204 && r.status != 304 && !r.no_content_length) {
    out += "Content-Length: ";
    out += std::to_string(r.declared_length.value_or(r.body_length));
    out += "\r\n";
  }
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return out;
}

}  // namespace ossmount::testserver

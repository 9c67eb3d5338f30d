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
  out += "Content-Length: ";
  out += std::to_string(r.body_length);
  out += keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n";
  return out;
}

}  // namespace ossmount::testserver

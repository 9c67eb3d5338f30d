#include "common/xml_escape.h"

#include <cstdio>

namespace ossmount {

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (u < 0x20 || u == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "&#%u;", static_cast<unsigned>(u));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace ossmount

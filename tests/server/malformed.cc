#include "malformed.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <memory>

namespace ossmount::testserver {
namespace {

constexpr std::array<std::string_view, 8> kKinds = {
    "invalid-xml",          "truncated-xml",       "huge-xml",        "html-200",
    "short-content-length", "long-content-length", "missing-headers", "wrong-crc"};

constexpr size_t kHugeXmlBytes = 50u << 20;

bool NameIs(const std::string& a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const std::string* Header(const Response& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (NameIs(n, name)) return &v;
  }
  return nullptr;
}

void Drop(Response& r, std::initializer_list<std::string_view> names) {
  r.headers.erase(std::remove_if(r.headers.begin(), r.headers.end(),
                                 [&](const auto& h) {
                                   for (auto n : names) {
                                     if (NameIs(h.first, n)) return true;
                                   }
                                   return false;
                                 }),
                  r.headers.end());
}

// The body as text when it is an in-memory XML document.
const std::string* XmlBody(const Response& r) {
  const std::string* type = Header(r, "Content-Type");
  if (!r.body || r.omit_body || !type || type->find("xml") == std::string::npos) return nullptr;
  return r.body.get();
}

void SetBody(Response& r, std::string text) {
  r.body_offset = 0;
  r.body_length = text.size();
  r.file_path.clear();
  r.body = std::make_shared<const std::string>(std::move(text));
}

std::string BodyText(const Response& r) { return r.body->substr(r.body_offset, r.body_length); }

}  // namespace

bool IsMalformedKind(std::string_view kind) {
  return std::find(kKinds.begin(), kKinds.end(), kind) != kKinds.end();
}

std::string MalformedKindList() {
  std::string out;
  for (auto k : kKinds) {
    if (!out.empty()) out += ' ';
    out += k;
  }
  return out;
}

bool ApplyMalformed(std::string_view kind, Response& resp) {
  if (kind == "invalid-xml" || kind == "truncated-xml" || kind == "huge-xml") {
    if (!XmlBody(resp)) return false;
    std::string xml = BodyText(resp);
    if (kind == "invalid-xml") {
      SetBody(resp,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult><Name>b</Name>"
              "<Contents><Key>k</Key><Size>12</Size></Contents &bogus; <<<");
    } else if (kind == "truncated-xml") {
      xml.resize(xml.size() / 2);
      SetBody(resp, std::move(xml));
    } else {
      size_t close = xml.rfind("</");
      if (close == std::string::npos) return false;
      std::string huge;
      huge.reserve(xml.size() + kHugeXmlBytes + 16);
      huge.append(xml, 0, close);
      huge += "<!--";
      huge.append(kHugeXmlBytes, 'x');
      huge += "-->";
      huge.append(xml, close, std::string::npos);
      SetBody(resp, std::move(huge));
    }
    return true;
  }
  if (kind == "html-200") {
    if (resp.omit_body) return false;
    Drop(resp, {"ETag", "Content-Type", "x-oss-hash-crc64ecma", "Content-Range", "Last-Modified",
                "Content-MD5"});
    resp.status = 200;
    resp.Add("Content-Type", "text/html");
    SetBody(resp,
            "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>"
            "<p>The proxy server received an invalid response from an upstream server.</p>"
            "</body></html>\n");
    return true;
  }
  if (kind == "short-content-length" || kind == "long-content-length") {
    if (resp.omit_body || resp.body_length == 0) return false;
    uint64_t n = resp.body_length;
    resp.declared_length =
        kind == "short-content-length" ? n - std::max<uint64_t>(1, n / 3) : n + 1000;
    resp.close = true;  // the extra (or missing) bytes must not poison the next response
    return true;
  }
  if (kind == "missing-headers") {
    Drop(resp, {"ETag", "Last-Modified", "x-oss-hash-crc64ecma", "Content-MD5"});
    if (!resp.omit_body) {
      resp.no_content_length = true;
      resp.close = true;
    }
    return true;
  }
  if (kind == "wrong-crc") {
    for (auto& [name, value] : resp.headers) {
      if (NameIs(name, "x-oss-hash-crc64ecma")) {
        uint64_t crc = std::strtoull(value.c_str(), nullptr, 10);
        value = std::to_string(crc + 1);
        return true;
      }
    }
    return false;
  }
  return false;
}

}  // namespace ossmount::testserver

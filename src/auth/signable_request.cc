// SignableRequest accessors and the header/string helpers all three schemes share.
#include <algorithm>
#include <map>

#include "auth/signer.h"
#include "auth/signing_internal.h"
#include "common/strings.h"

namespace ossmount::auth {
namespace {}  // namespace

const std::string* SignableRequest::Header(std::string_view name) const {
  return FindIgnoreCase(headers, name);
}

void SignableRequest::SetHeader(std::string name, std::string value) {
  // Replace the first occurrence and drop any repeats, so the header has exactly one value.
  bool replaced = false;
  for (auto it = headers.begin(); it != headers.end();) {
    if (EqualsIgnoreCase(it->first, name)) {
      if (!replaced) {
        it->first = name;
        it->second = value;
        replaced = true;
        ++it;
      } else {
        it = headers.erase(it);
      }
    } else {
      ++it;
    }
  }
  if (!replaced) headers.emplace_back(std::move(name), std::move(value));
}

namespace internal {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::pair<std::string, std::string>> CollectHeaders(
    const SignableRequest& request, const std::function<bool(const std::string&)>& want) {
  std::map<std::string, std::string> by_name;
  for (const auto& [name, value] : request.headers) {
    std::string lower = ToLower(name);
    if (!want(lower)) continue;
    auto [it, inserted] = by_name.emplace(lower, std::string(Trim(value)));
    if (!inserted) {
      it->second += ',';
      it->second += Trim(value);
    }
  }
  return {by_name.begin(), by_name.end()};
}

}  // namespace internal
}  // namespace ossmount::auth

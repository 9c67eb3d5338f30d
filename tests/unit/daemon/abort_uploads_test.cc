// UploadsToAbort: which open multipart uploads `ossmount abort-uploads` aborts.
#include <catch2/catch.hpp>

#include "abort_uploads_command.h"

using ossmount::OpenUpload;
using ossmount::daemon::UploadsToAbort;

namespace {
std::vector<std::string> Keys(const std::vector<OpenUpload>& uploads) {
  std::vector<std::string> keys;
  for (const auto& u : uploads) keys.push_back(u.key);
  return keys;
}
}  // namespace

TEST_CASE("abort-uploads takes the uploads started at least the given age ago") {
  const int64_t now = 1'800'000'000;
  const std::vector<OpenUpload> open{{"old", "u1", now - 2 * 86400},
                                     {"day", "u2", now - 86400},
                                     {"fresh", "u3", now - 60},
                                     {"unknown", "u4", 0}};
  CHECK(Keys(UploadsToAbort(open, now, 86400)) == std::vector<std::string>{"old", "day"});
  CHECK(Keys(UploadsToAbort(open, now, 3600)) == std::vector<std::string>{"old", "day"});
  CHECK(Keys(UploadsToAbort(open, now, 30)) == std::vector<std::string>{"old", "day", "fresh"});
  // An upload whose start the server did not give is taken only when every upload is.
  CHECK(Keys(UploadsToAbort(open, now, 0)) ==
        std::vector<std::string>{"old", "day", "fresh", "unknown"});
  CHECK(UploadsToAbort({}, now, 0).empty());
}

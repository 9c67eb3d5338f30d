// The smallest valid command line of the parser tests, and that line plus more arguments
// (shared by the test files of config_test, which a unity build compiles together).
#pragma once

#include <string>
#include <vector>

namespace ossmount::config::testing {

inline const std::vector<std::string> kBase = {"bucket1", "/mnt/x", "--endpoint",
                                               "http://127.0.0.1:9000"};

inline std::vector<std::string> With(std::vector<std::string> extra) {
  std::vector<std::string> v = kBase;
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

}  // namespace ossmount::config::testing

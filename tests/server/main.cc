// ossmount-testserver: see server.h and --help.
#include <cstdio>
#include <iostream>

#include "server.h"

int main(int argc, char** argv) {
  using namespace ossmount::testserver;
  int exit_code = 2;
  auto options = ParseServerOptions(argc, argv, &exit_code);
  if (!options.ok()) {
    std::fputs(options.status().message().c_str(), exit_code == 0 ? stdout : stderr);
    return exit_code;
  }
  try {
    Server server(options.value());
    auto s = server.Start();
    if (!s.ok()) {
      std::fprintf(stderr, "ossmount-testserver: %s\n", s.ToString().c_str());
      return 2;
    }
    std::printf("listening on %s:%u\n", options.value().host.c_str(), server.port());
    std::fflush(stdout);
    server.Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ossmount-testserver: fatal: %s\n", e.what());
    return 1;
  }
  return 0;
}

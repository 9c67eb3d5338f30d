// Mount options: how the kernel mount behaves and who may use it (FUSE passthrough, FUSE
// over io_uring, allow_other / allow_root, mounting over a non-empty directory) ->
// MountConfig::daemon.
#include <string>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

class MountGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    // Listed with the data path in --help: they decide how reads reach the daemon.
    d.SetHeading(kDataPathHeading);
    d.Flag("--no-passthrough", no_passthrough_,
           "Never let the kernel read cached files directly (FUSE passthrough, used by "
           "default where the kernel offers it)");
    d.Value("--fuse-io-uring", fuse_io_uring_,
            "How FUSE requests reach the daemon: auto (io_uring rings where the kernel's "
            "switch is on, else /dev/fuse; default), on (also turn the switch on, as "
            "root; fail if impossible) or off");
    d.SetHeading(kMountHeading);
    d.Flag("--allow-other", allow_other_,
           "Let other users access the mount (needs user_allow_other in /etc/fuse.conf "
           "unless root)");
    d.Flag("--allow-root", allow_root_, "Let root access the mount too");
    d.Flag("--nonempty", nonempty_, "Allow mounting over a non-empty directory");
  }

  Status Validate(const OptionContext&, MountConfig& c) const override {
    DaemonSettings& d = c.daemon;
    if (allow_other_ && allow_root_) {
      return InvalidOption(
          "--allow-other contradicts --allow-root (allow_other already includes root); "
          "drop one of them");
    }
    d.allow_other = allow_other_;
    d.allow_root = allow_root_;
    d.passthrough = !no_passthrough_;
    if (fuse_io_uring_ != "auto" && fuse_io_uring_ != "on" && fuse_io_uring_ != "off") {
      return InvalidOption("--fuse-io-uring: '" + fuse_io_uring_ +
                           "' is not valid; expected auto, on or off");
    }
    d.fuse_io_uring = fuse_io_uring_;
    d.nonempty = nonempty_;
    return Status::Ok();
  }

 private:
  bool no_passthrough_ = false;
  std::string fuse_io_uring_ = "auto";
  bool allow_other_ = false, allow_root_ = false, nonempty_ = false;
};

}  // namespace

std::unique_ptr<OptionGroup> MakeMountGroup() { return std::make_unique<MountGroup>(); }

}  // namespace ossmount::config

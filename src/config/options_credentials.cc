// Credential options: which sources the credentials provider may use ->
// MountConfig::credential_sources (protocol and bucket: CheckAcrossGroups). The key pair
// itself is never an option (argv is visible in ps).
#include <string>

#include "config/option_group.h"

namespace ossmount::config {
namespace {

class CredentialsGroup final : public OptionGroup {
 public:
  void Define(OptionDefiner& d) override {
    d.SetHeading(kCredentialsHeading);
    d.Value("--credentials-file", credentials_file_,
            "JSON or INI credentials file (default ~/.alibabacloud/credentials)");
    d.Value("--passwd-file", passwd_file_,
            "ossfs-style passwd file (bucket:id:secret or id:secret), mode 0600");
    d.Value("--ram-role", ram_role_,
            "ECS RAM role name, or 'auto' to discover it from the metadata service");
    d.Value("--ecs-metadata-url", ecs_metadata_url_,
            "ECS metadata service (default http://100.100.100.200)");
    d.Flag("--anonymous", anonymous_, "Send unsigned requests (public buckets)");
  }

  Status Validate(const OptionContext& ctx, MountConfig& c) const override {
    auth::CredentialSources& cred = c.credential_sources;
    cred.anonymous = anonymous_;
    cred.credentials_file = credentials_file_;
    cred.passwd_file = passwd_file_;
    cred.ram_role = ram_role_;
    for (const char* name : {"--credentials-file", "--passwd-file", "--ram-role"}) {
      if (ctx.given(name) && anonymous_) {
        return InvalidOption(std::string(name) + " contradicts --anonymous; drop one of them");
      }
    }
    if (ctx.given("--credentials-file") && credentials_file_.empty()) {
      return InvalidOption("--credentials-file: is empty");
    }
    if (ctx.given("--passwd-file") && passwd_file_.empty()) {
      return InvalidOption("--passwd-file: is empty");
    }
    if (ctx.given("--ram-role") && ram_role_.empty()) {
      return InvalidOption("--ram-role: is empty (give a role name, or 'auto')");
    }
    if (ctx.given("--ecs-metadata-url")) {
      if (ram_role_.empty()) return InvalidOption("--ecs-metadata-url needs --ram-role");
      auto url = ParseEndpoint("--ecs-metadata-url", ecs_metadata_url_);
      if (!url.ok()) return url.status();
      cred.ecs_metadata_url = *url;
    }
    return Status::Ok();
  }

 private:
  std::string credentials_file_, passwd_file_, ram_role_, ecs_metadata_url_;
  bool anonymous_ = false;
};

}  // namespace

std::unique_ptr<OptionGroup> MakeCredentialsGroup() { return std::make_unique<CredentialsGroup>(); }

}  // namespace ossmount::config

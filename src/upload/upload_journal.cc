#include "upload/upload_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "common/crc64.h"
#include "common/read_file.h"
#include "common/unique_fd.h"
#include "common/write_all.h"

namespace ossmount::upload {
namespace {

constexpr const char* kSuffix = ".upload";

std::string Hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Status IoError(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kNoSpace, what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

Result<std::shared_ptr<UploadJournal>> UploadJournal::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot create the upload journal directory '" + dir + "': " + ec.message());
  }
  ::chmod(dir.c_str(), 0700);
  if (::access(dir.c_str(), W_OK) != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "the upload journal directory '" + dir + "' is not writable");
  }
  return std::shared_ptr<UploadJournal>(new UploadJournal(dir));
}

std::string UploadJournal::DirectoryFor(const std::string& base, const std::string& endpoint,
                                        const std::string& bucket, const std::string& prefix) {
  const std::string source = endpoint + '\n' + bucket + '\n' + prefix;
  return base + "/" + Hex(Crc64(0, source.data(), source.size()));
}

std::string UploadJournal::FileFor(const std::string& upload_id) const {
  return dir_ + "/" + Hex(Crc64(0, upload_id.data(), upload_id.size())) + kSuffix;
}

Status UploadJournal::Add(const std::string& key, const std::string& upload_id) {
  const std::string path = FileFor(upload_id);
  const std::string tmp = path + ".tmp";
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd) return IoError("cannot write the upload record", tmp);
    // The key may hold any byte but NUL; the id is the service's token. Lengths first.
    const std::string text = std::to_string(key.size()) + "\n" + key + "\n" + upload_id + "\n";
    if (!WriteAll(fd.get(), text) || ::fsync(fd.get()) != 0) {
      Status s = IoError("cannot write the upload record", tmp);
      ::unlink(tmp.c_str());
      return s;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = IoError("cannot write the upload record", path);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

void UploadJournal::Remove(const std::string& upload_id) { ::unlink(FileFor(upload_id).c_str()); }

std::vector<UploadJournal::Record> UploadJournal::Records() const {
  std::vector<Record> records;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string path = entry.path().string();
    if (path.size() < strlen(kSuffix) ||
        path.compare(path.size() - strlen(kSuffix), std::string::npos, kSuffix) != 0) {
      continue;
    }
    const std::string text = ReadFileOrEmpty(path);
    const size_t nl = text.find('\n');
    if (nl == std::string::npos) continue;
    if (nl == 0 || nl > 20 ||
        text.find_first_not_of("0123456789") < nl) {  // a length of digits only
      continue;
    }
    const uint64_t key_size = std::stoull(text.substr(0, nl));
    if (key_size > text.size() || nl + 1 + key_size + 1 > text.size()) continue;
    Record r;
    r.key = text.substr(nl + 1, key_size);
    const size_t id_start = nl + 1 + key_size + 1;
    const size_t id_end = text.find('\n', id_start);
    if (id_end == std::string::npos || id_end == id_start) continue;
    r.upload_id = text.substr(id_start, id_end - id_start);
    r.file = path;
    records.push_back(std::move(r));
  }
  return records;
}

void UploadJournal::AbortLeftovers(std::shared_ptr<ObjectClient> client,
                                   std::function<void(size_t, Status)> done) {
  struct State {
    std::mutex mu;
    size_t pending = 0;
    size_t aborted = 0;
    Status first_error;
    std::function<void(size_t, Status)> done;
  };
  auto records = Records();
  if (records.empty()) return done(0, Status::Ok());
  auto state = std::make_shared<State>();
  state->pending = records.size();
  state->done = std::move(done);
  for (const Record& r : records) {
    client->AbortMultipart(r.key, r.upload_id, [state, file = r.file](Status s) {
      bool last = false;
      {
        std::lock_guard lock(state->mu);
        if (s.ok()) {
          ::unlink(file.c_str());
          ++state->aborted;
        } else if (state->first_error.ok()) {
          state->first_error = s;
        }
        last = --state->pending == 0;
      }
      if (last) state->done(state->aborted, state->first_error);
    });
  }
}

}  // namespace ossmount::upload

#include "upload/upload_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include "common/crc64.h"
#include "common/read_file.h"
#include "common/write_all.h"

namespace ossmount::upload {
namespace {

constexpr const char* kSuffix = ".upload";
constexpr const char* kSessionPrefix = "session-";
constexpr const char* kNewSessionPrefix = ".session-";  // not yet locked and in place
constexpr const char* kLockFile = "lock";

std::string Hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Status IoError(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kNoSpace, what + " '" + path + "': " + std::strerror(errno));
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, strlen(prefix), prefix) == 0;
}

// The well-formed records in `dir` (files "<hash>.upload"; anything else is skipped).
std::vector<UploadJournal::Record> RecordsIn(const std::string& dir) {
  std::vector<UploadJournal::Record> records;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
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
    UploadJournal::Record r;
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

// A session directory whose owner is gone, locked by this process while its uploads are
// aborted (another starting daemon then leaves it alone).
struct DeadSession {
  std::string dir;
  UniqueFd lock;
};

// Locks the session in `dir` if its owner is gone; nullopt when it lives.
std::optional<DeadSession> TakeIfDead(const std::string& dir) {
  UniqueFd fd(::open((dir + "/" + kLockFile).c_str(), O_RDWR | O_CLOEXEC));
  // No lock file: a session that died before it was locked (it never recorded anything).
  if (fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return std::nullopt;
  return DeadSession{dir, std::move(fd)};
}

// Removes a dead session's directory once it holds no record.
void RemoveIfEmpty(const DeadSession& session) {
  if (!RecordsIn(session.dir).empty()) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(session.dir, ec)) {
    ::unlink(entry.path().c_str());  // the lock and any half-written record
  }
  ::rmdir(session.dir.c_str());
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
  uint64_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != sizeof random) {
    random = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  const std::string name = std::to_string(::getpid()) + "-" + Hex(random);
  const std::string fresh = dir + "/" + kNewSessionPrefix + name;
  const std::string session = dir + "/" + kSessionPrefix + name;
  auto failed = [&](const std::string& what) {
    Status s(ErrorCode::kInvalidArgument, "cannot start a session in the upload journal '" + dir +
                                              "': " + what + ": " + std::strerror(errno));
    std::filesystem::remove_all(fresh, ec);
    return s;
  };
  if (::mkdir(fresh.c_str(), 0700) != 0) return failed("mkdir");
  UniqueFd lock(::open((fresh + "/" + kLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) return failed("creating its lock file");
  // A file system without flock (some network file systems) cannot tell live sessions from
  // dead ones: refuse it rather than abort a live daemon's uploads.
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) return failed("locking it");
  if (::rename(fresh.c_str(), session.c_str()) != 0) return failed("renaming it into place");
  return std::shared_ptr<UploadJournal>(new UploadJournal(dir, session, std::move(lock)));
}

std::string UploadJournal::DirectoryFor(const std::string& base, const std::string& endpoint,
                                        const std::string& bucket, const std::string& prefix) {
  const std::string source = endpoint + '\n' + bucket + '\n' + prefix;
  return base + "/" + Hex(Crc64(0, source.data(), source.size()));
}

std::string UploadJournal::FileFor(const std::string& upload_id) const {
  return session_dir_ + "/" + Hex(Crc64(0, upload_id.data(), upload_id.size())) + kSuffix;
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
  return RecordsIn(session_dir_);
}

void UploadJournal::AbortLeftovers(std::shared_ptr<ObjectClient> client,
                                   std::function<void(size_t, Status)> done) {
  struct State {
    std::mutex mu;
    size_t pending = 0;
    size_t aborted = 0;
    Status first_error;
    std::vector<DeadSession> dead;  // locked until every abort is answered
    std::function<void(size_t, Status)> done;
  };
  auto state = std::make_shared<State>();
  state->done = std::move(done);
  // Records an older version wrote into the directory itself, then dead sessions'.
  std::vector<Record> records = RecordsIn(dir_);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string path = entry.path().string();
    if (path == session_dir_ || !entry.is_directory(ec)) continue;
    if (!StartsWith(name, kSessionPrefix) && !StartsWith(name, kNewSessionPrefix)) continue;
    std::optional<DeadSession> dead = TakeIfDead(path);
    if (!dead) continue;  // its daemon lives: its uploads are its own
    for (Record& r : RecordsIn(path)) records.push_back(std::move(r));
    state->dead.push_back(std::move(*dead));
  }
  auto finish = [state] {
    for (const DeadSession& session : state->dead) RemoveIfEmpty(session);
    state->dead.clear();  // unlocks
    state->done(state->aborted, state->first_error);
  };
  if (records.empty()) return finish();
  state->pending = records.size();
  for (const Record& r : records) {
    client->AbortMultipart(r.key, r.upload_id, [state, finish, file = r.file](Status s) {
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
      if (last) finish();
    });
  }
}

}  // namespace ossmount::upload

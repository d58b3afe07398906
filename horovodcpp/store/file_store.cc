#include "store/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>

#include "base/check.h"
#include "store/counter.h"

namespace hvd {
namespace {

// Longest encoded key kept verbatim; file names are limited to 255 bytes.
constexpr std::size_t kMaxVerbatimName = 200;
constexpr std::size_t kHashedPrefix = 150;

std::string errno_text(int err) { return std::string(std::strerror(err)); }

void create_directories(const std::string& dir) {
  HVD_CHECK(!dir.empty(), InvalidArgument, "FileStore: the directory must not be empty");
  std::string prefix;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    prefix = dir.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      HVD_THROW(Error,
                "FileStore: cannot create directory " << prefix << ": " << errno_text(errno));
    }
  }
  struct stat st;
  HVD_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), Error,
            "FileStore: " << dir << " is not a directory");
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

FileStore::FileStore(std::string directory) : directory_(std::move(directory)) {
  while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
  create_directories(directory_);
}

std::string FileStore::encode_key(const std::string& key) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (unsigned char c : key) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  if (out.size() > kMaxVerbatimName) {
    // FNV-1a over the whole key; '~' never appears in a verbatim encoding.
    std::uint64_t hash = 1469598103934665603ULL;
    for (unsigned char c : key) hash = (hash ^ c) * 1099511628211ULL;
    out.resize(kHashedPrefix);
    out.push_back('~');
    for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(hash >> shift) & 0xF]);
  }
  return out;
}

// Value files are "k<encoded>", lock files "l<encoded>", temp files ".t...":
// the prefixes keep the three kinds from ever colliding.
std::string FileStore::path_of(const std::string& key) const {
  return directory_ + "/k" + encode_key(key);
}

std::string FileStore::lock_path_of(const std::string& key) const {
  return directory_ + "/l" + encode_key(key);
}

bool FileStore::try_read(const std::string& key, std::string* value) const {
  const std::string path = path_of(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return false;
    HVD_THROW(Error, "FileStore: cannot open " << path << " for key '" << key
                                               << "': " << errno_text(errno));
  }
  value->clear();
  char buffer[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      HVD_THROW(Error, "FileStore: cannot read " << path << ": " << errno_text(errno));
    }
    if (n == 0) break;
    value->append(buffer, static_cast<std::size_t>(n));
  }
  return true;
}

void FileStore::write_atomically(const std::string& key, const std::string& value) {
  static std::atomic<unsigned long long> counter{0};
  const std::string path = path_of(key);
  const std::string tmp =
      directory_ + "/.t" + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    HVD_CHECK(fd.get() >= 0, Error,
              "FileStore: cannot create " << tmp << ": " << errno_text(errno));
    std::size_t done = 0;
    while (done < value.size()) {
      ssize_t n = ::write(fd.get(), value.data() + done, value.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::unlink(tmp.c_str());
        HVD_THROW(Error, "FileStore: cannot write " << tmp << ": " << errno_text(err));
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd.release()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      HVD_THROW(Error, "FileStore: cannot write " << tmp << ": " << errno_text(err));
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    HVD_THROW(Error, "FileStore: cannot rename " << tmp << " to " << path << " for key '" << key
                                                 << "': " << errno_text(err));
  }
}

void FileStore::set(const std::string& key, const std::string& value) {
  write_atomically(key, value);
}

std::string FileStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  auto pause = std::chrono::milliseconds(1);
  std::string value;
  for (;;) {
    if (try_read(key, &value)) return value;
    const auto now = Clock::now();
    if (now >= deadline) {
      HVD_THROW(Timeout, "FileStore: key '" << key << "' did not appear in " << directory_
                                            << " within " << timeout.count() << " ms");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

long long FileStore::add(const std::string& key, long long delta) {
  const std::string lock_path = lock_path_of(key);
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  HVD_CHECK(lock.get() >= 0, Error,
            "FileStore: cannot open lock file " << lock_path << ": " << errno_text(errno));
  while (::flock(lock.get(), LOCK_EX) != 0) {
    HVD_CHECK(errno == EINTR, Error,
              "FileStore: cannot lock " << lock_path << ": " << errno_text(errno));
  }
  // The lock is released when `lock` closes, also on the error paths.
  long long current = 0;
  std::string text;
  if (try_read(key, &text)) {
    HVD_CHECK(parse_counter(text, &current), InvalidArgument,
              "FileStore: add('" << key << "'): the stored value is not an integer");
  }
  long long updated = 0;
  HVD_CHECK(
      !__builtin_add_overflow(current, delta, &updated), InvalidArgument,
      "FileStore: add('" << key << "', " << delta << ") overflows the counter (" << current << ")");
  write_atomically(key, std::to_string(updated));
  return updated;
}

}  // namespace hvd

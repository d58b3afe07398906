// FileStore: a Store in a directory shared by the ranks of one host (or a
// shared file system). Each key is one file written atomically (temp file +
// rename); counters are updated under an flock()ed lock file per key.
#pragma once

#include <chrono>
#include <string>

#include "store/store.h"

namespace hvd {

class FileStore : public Store {
 public:
  // Creates `directory` (and its parents) if missing.
  explicit FileStore(std::string directory);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  long long add(const std::string& key, long long delta) override;

  const std::string& directory() const { return directory_; }

  // The file name (inside directory()) that holds `key`: every byte outside
  // [A-Za-z0-9_-] is escaped as %XX; very long keys are shortened with a hash.
  static std::string encode_key(const std::string& key);

 private:
  std::string path_of(const std::string& key) const;
  std::string lock_path_of(const std::string& key) const;
  // Reads the file of `key`; false when it does not exist (yet).
  bool try_read(const std::string& key, std::string* value) const;
  void write_atomically(const std::string& key, const std::string& value);

  std::string directory_;
};

}  // namespace hvd

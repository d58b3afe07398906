// FileStore in a temporary directory: its own directory, key encoding (odd
// and long keys stay inside it), two instances sharing it, timeouts naming
// the directory (what every store does: test_store_conformance.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/errors.h"
#include "store/file_store.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        std::filesystem::temp_directory_path().string() + "/hvd_file_store_XXXXXX";
    ASSERT_NE(::mkdtemp(&pattern[0]), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  std::string dir() const { return root_ + "/store"; }

  std::string root_;
};

TEST_F(FileStoreTest, CreatesMissingDirectory) {
  const std::string nested = root_ + "/a/b/c/";
  FileStore store(nested);
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/a/b/c"));
  store.set("k", "v");
  EXPECT_EQ(store.get("k", milliseconds(100)), "v");
}

TEST_F(FileStoreTest, RoundTripsBinaryEmptyAndOddKeys) {
  FileStore store(dir());
  const std::string binary("a\0b\xff\n\0", 6);
  store.set("binary", binary);
  store.set("empty", "");
  store.set("rank/0/addr", "10.0.0.1:1234");
  store.set("../escape", "dots");
  store.set("", "empty key");
  store.set(std::string("nul\0key", 7), "nul");
  store.set(std::string(1000, 'x'), "long key");
  store.set(std::string(999, 'x') + "y", "other long key");

  EXPECT_EQ(store.get("binary", milliseconds(100)), binary);
  EXPECT_EQ(store.get("binary", milliseconds(100)).size(), 6u);
  EXPECT_EQ(store.get("empty", milliseconds(100)), "");
  EXPECT_EQ(store.get("rank/0/addr", milliseconds(100)), "10.0.0.1:1234");
  EXPECT_EQ(store.get("../escape", milliseconds(100)), "dots");
  EXPECT_EQ(store.get("", milliseconds(100)), "empty key");
  EXPECT_EQ(store.get(std::string("nul\0key", 7), milliseconds(100)), "nul");
  EXPECT_EQ(store.get(std::string(1000, 'x'), milliseconds(100)), "long key");
  EXPECT_EQ(store.get(std::string(999, 'x') + "y", milliseconds(100)), "other long key");
  // Nothing escaped the directory.
  EXPECT_FALSE(std::filesystem::exists(root_ + "/escape"));

  store.set("binary", "overwritten");
  EXPECT_EQ(store.get("binary", milliseconds(100)), "overwritten");
}

TEST_F(FileStoreTest, EncodedNamesAreSafe) {
  for (const std::string& key :
       {std::string("a/b"), std::string(".."), std::string("x y%"), std::string(5000, '/')}) {
    const std::string name = FileStore::encode_key(key);
    EXPECT_EQ(name.find('/'), std::string::npos) << name;
    EXPECT_LE(name.size(), 200u);
  }
  EXPECT_NE(FileStore::encode_key("a/b"), FileStore::encode_key("a%2Fb"));
}

TEST_F(FileStoreTest, TwoInstancesShareTheDirectory) {
  FileStore writer(dir());
  FileStore reader(dir());
  writer.set("shared", "value");
  EXPECT_EQ(reader.get("shared", milliseconds(100)), "value");
}

TEST_F(FileStoreTest, TimeoutNamesTheDirectory) {
  FileStore store(dir());
  try {
    store.get("missing/key", milliseconds(50));
    FAIL() << "get returned";
  } catch (const Timeout& e) {
    EXPECT_NE(std::string(e.what()).find(dir()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hvd

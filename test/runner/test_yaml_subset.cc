// parse_yaml_subset: the nested maps of scalars Horovod's config files use,
// and one clear error for the YAML it does not read.
#include <gtest/gtest.h>

#include "runner/cli/yaml_subset.h"
#include "usage_message.h"

namespace hvdrun {
namespace {

std::string dump(const std::string& text) {
  std::string out;
  for (const YamlScalar& s : parse_yaml_subset(text)) {
    out += std::to_string(s.line) + " " + s.path + "=" + (s.value ? "<" + *s.value + ">" : "null") +
           "\n";
  }
  return out;
}

std::string error(const std::string& text) {
  return usage_message([&] { parse_yaml_subset(text); });
}

TEST(YamlSubset, HorovodsLayout) {
  EXPECT_EQ(dump("---\n"
                 "# Horovod config\n"
                 "controller: gloo\n"
                 "params:\n"
                 "  fusion_threshold_mb: 32   # MB\n"
                 "  cycle_time_ms: 2.5\n"
                 "\n"
                 "  hierarchical_allreduce: True\n"
                 "autotune:\n"
                 "    enabled: false\n"
                 "    log_file: '/tmp/it''s.csv'\n"
                 "timeline:\n"
                 "  filename: \"/tmp/t #1.json\"  # quoted '#'\n"
                 "logging:\n"
                 "  level:\n"
                 "stall_check: ~\n"),
            "3 controller=<gloo>\n"
            "5 params.fusion_threshold_mb=<32>\n"
            "6 params.cycle_time_ms=<2.5>\n"
            "8 params.hierarchical_allreduce=<True>\n"
            "10 autotune.enabled=<false>\n"
            "11 autotune.log_file=</tmp/it's.csv>\n"
            "13 timeline.filename=</tmp/t #1.json>\n"
            "15 logging.level=null\n"
            "16 stall_check=null\n");
}

TEST(YamlSubset, DeeperNestingAndDedent) {
  EXPECT_EQ(dump("a:\n  b:\n    c: 1\n  d: 2\ne: 3\n"), "3 a.b.c=<1>\n4 a.d=<2>\n5 e=<3>\n");
  EXPECT_EQ(dump("empty:\n"), "1 empty=null\n");
  EXPECT_EQ(dump(""), "");
  EXPECT_EQ(dump("  indented: 1\n  too: \"a\\\"b\"\n"), "1 indented=<1>\n2 too=<a\"b>\n");
}

TEST(YamlSubset, ErrorsNameTheLine) {
  EXPECT_EQ(error("params:\n  cycle_time_ms: 1\n  cycle_time_ms: 2\n"),
            "3: duplicate key 'params.cycle_time_ms'");
  EXPECT_EQ(error("a: 1\n  b: 2\n"), "2: unexpected indentation before 'b'");
  EXPECT_EQ(error("a:\n    b: 1\n  c: 2\n"), "3: the indentation of 'c' matches no enclosing key");
  EXPECT_EQ(error("a:\n\tb: 1\n"), "2: tabs are not allowed for indentation in YAML");
  EXPECT_EQ(error("hosts:\n  - h1\n"),
            "2: YAML lists are not part of Horovod's config layout: '- h1'");
  EXPECT_EQ(error("params: {cycle_time_ms: 1}\n"),
            "1: unsupported YAML value '{cycle_time_ms: 1}' (Horovod's config layout needs only "
            "'key: value' and nested keys)");
  EXPECT_EQ(error("just words\n"), "1: expected 'key: value' or 'key:', got 'just words'");
  EXPECT_EQ(error("url:http://x\n"), "1: expected 'key: value' or 'key:', got 'url:http://x'");
  EXPECT_EQ(error("a: 'open\n"), "1: unterminated 'quoted' value");
  EXPECT_EQ(error("a: \"x\" y\n"), "1: unexpected text after the quoted value: 'y'");
}

}  // namespace
}  // namespace hvdrun

#include "runner/cli/yaml_subset.h"

#include <cctype>
#include <set>

#include "runner/cli/text.h"

namespace hvdrun {
namespace {

struct Level {
  int indent;
  std::string prefix;  // "params." inside "params:"
};

struct Pending {  // "key:" with nothing after it: a nested map or a null
  std::string path;
  int indent;
  int line;
};

bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// The rest after a closing quote may only be a comment.
void expect_only_comment(const std::string& rest, int line) {
  std::string t = trim(rest);
  if (!t.empty() && t[0] != '#') {
    usage(std::to_string(line) + ": unexpected text after the quoted value: '" + t + "'");
  }
}

std::optional<std::string> parse_value(const std::string& text, int line) {
  const char first = text[0];
  if (first == '\'') {  // '' is a quote; nothing else is special
    std::string value;
    for (std::size_t i = 1; i < text.size(); ++i) {
      if (text[i] != '\'') {
        value += text[i];
      } else if (i + 1 < text.size() && text[i + 1] == '\'') {
        value += '\'';
        ++i;
      } else {
        expect_only_comment(text.substr(i + 1), line);
        return value;
      }
    }
    usage(std::to_string(line) + ": unterminated 'quoted' value");
  }
  if (first == '"') {
    std::string value;
    for (std::size_t i = 1; i < text.size(); ++i) {
      if (text[i] == '"') {
        expect_only_comment(text.substr(i + 1), line);
        return value;
      }
      if (text[i] == '\\' && i + 1 < text.size()) {
        const char e = text[++i];
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        value += text[i];
      }
    }
    usage(std::to_string(line) + ": unterminated \"quoted\" value");
  }
  if (std::string("{[&*|>!%@`").find(first) != std::string::npos) {
    usage(std::to_string(line) + ": unsupported YAML value '" + text +
          "' (Horovod's config layout needs only 'key: value' and nested keys)");
  }
  std::string value = text;
  std::size_t comment = value.find(" #");
  if (comment != std::string::npos) value = trim(value.substr(0, comment));
  if (value == "~" || value == "null" || value == "Null" || value == "NULL") return std::nullopt;
  return value;
}

}  // namespace

std::vector<YamlScalar> parse_yaml_subset(const std::string& text) {
  std::vector<YamlScalar> scalars;
  std::vector<Level> levels;
  std::optional<Pending> pending;
  std::set<std::string> seen;
  std::size_t begin = 0;
  for (int line = 1; begin <= text.size(); ++line) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string raw = text.substr(begin, end - begin);
    begin = end + 1;
    const std::string where = std::to_string(line) + ": ";

    std::size_t indent = raw.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    if (raw[indent] == '\t') usage(where + "tabs are not allowed for indentation in YAML");
    std::string rest = trim(raw.substr(indent));
    if (rest.empty() || rest[0] == '#') continue;
    if (rest == "---" && scalars.empty() && !pending && levels.empty()) continue;
    if (rest[0] == '-') {
      usage(where + "YAML lists are not part of Horovod's config layout: '" + rest + "'");
    }

    std::size_t colon = rest.find(':');
    bool key_ok = colon != std::string::npos && colon > 0 &&
                  (colon + 1 == rest.size() || rest[colon + 1] == ' ');
    for (std::size_t i = 0; key_ok && i < colon; ++i) key_ok = is_key_char(rest[i]);
    if (!key_ok) usage(where + "expected 'key: value' or 'key:', got '" + rest + "'");
    const std::string key = rest.substr(0, colon);
    const std::string value_text = trim(rest.substr(colon + 1));

    const int at = static_cast<int>(indent);
    if (pending) {
      if (at > pending->indent) {
        levels.push_back({at, pending->path + "."});
      } else {
        scalars.push_back({pending->path, std::nullopt, pending->line});
      }
      pending.reset();
    }
    if (levels.empty()) levels.push_back({at, ""});
    if (at > levels.back().indent) usage(where + "unexpected indentation before '" + key + "'");
    while (levels.size() > 1 && at < levels.back().indent) levels.pop_back();
    if (at != levels.back().indent) {
      usage(where + "the indentation of '" + key + "' matches no enclosing key");
    }

    const std::string path = levels.back().prefix + key;
    if (!seen.insert(path).second) usage(where + "duplicate key '" + path + "'");
    if (value_text.empty() || value_text[0] == '#') {
      pending = Pending{path, at, line};
    } else {
      scalars.push_back({path, parse_value(value_text, line), line});
    }
  }
  if (pending) scalars.push_back({pending->path, std::nullopt, pending->line});
  return scalars;
}

}  // namespace hvdrun

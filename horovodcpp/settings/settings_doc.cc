#include "settings/settings_doc.h"

#include <sstream>

#include "settings/settings.h"

namespace hvd {
namespace settings {
namespace {

constexpr std::size_t kIndent = 6;
constexpr std::size_t kWidth = 79;

// What a value looks like: "MS", "0|1", "trace|debug|...".
std::string value_form(const Entry& e) {
  switch (e.type) {
    case Type::kBool: return "0|1";
    case Type::kInt: return "N";
    case Type::kBytes: return "BYTES";
    case Type::kSeconds: return "SECONDS";
    case Type::kMilliseconds: return "MS";
    case Type::kString: return "TEXT";
    case Type::kEnum: return e.choices;
  }
  return "";
}

std::string default_words(const Entry& e) {
  if (e.default_doc) return e.default_doc;
  if (e.fallback) return "`" + variable(*e.fallback) + "`";
  if (*e.default_value) return std::string("`") + e.default_value + "`";
  return "";
}

std::string without_backticks(std::string text) {
  std::string out;
  for (char c : text) {
    if (c != '`') out += c;
  }
  return out;
}

std::string sentence(std::string text) {
  return text.empty() || text.back() == '.' ? text : text + ".";
}

// The allowed range where it says more than "not negative, not absurd".
std::string range_words(const Entry& e) {
  if (e.type != Type::kInt && e.type != Type::kBytes && e.type != Type::kMilliseconds) return "";
  if (e.max <= 1.1e9) return number_str(e.min) + " to " + number_str(e.max);
  if (e.min > 0) return "at least " + number_str(e.min);
  return "";
}

// `text` wrapped at kWidth, each line indented by kIndent.
std::string wrapped(const std::string& text) {
  std::istringstream words(text);
  std::string out, word;
  std::size_t column = 0;
  while (words >> word) {
    if (column == 0 || column + 1 + word.size() > kWidth) {
      out += (column ? "\n" : "") + std::string(kIndent, ' ') + word;
      column = kIndent + word.size();
    } else {
      out += " " + word;
      column += 1 + word.size();
    }
  }
  return out + "\n";
}

std::string help_entries(Scope scope) {
  std::string out;
  for (const Entry& e : table()) {
    if (e.scope != scope) continue;
    out += "  " + variable(e.id) + "=" + value_form(e) + "\n";
    std::string doc = sentence(e.doc);
    const std::string fallback = without_backticks(default_words(e));
    if (!fallback.empty()) doc += " Default: " + fallback + ".";
    if (const std::string range = range_words(e); !range.empty()) doc += " Range: " + range + ".";
    if (e.zero_means) doc += std::string(" 0: ") + e.zero_means + ".";
    out += wrapped(doc);
  }
  return out;
}

std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string markdown_table(Scope scope) {
  std::string out =
      "| variable | Horovod's name | value | default | meaning |\n|---|---|---|---|---|\n";
  for (const Entry& e : table()) {
    if (e.scope != scope) continue;
    std::string meaning = sentence(e.doc);
    if (e.zero_means) meaning += std::string(" `0`: ") + e.zero_means + ".";
    if (*e.more) meaning += " " + sentence(e.more);
    out += "| `" + variable(e.id) + "` | " +
           (e.horovod_has ? "`" + horovod_variable(e.id) + "`" : std::string("—")) + " | " +
           cell(value_form(e)) + (range_words(e).empty() ? std::string() : ", " + range_words(e)) +
           " | " + cell(default_words(e)) + " | " + cell(meaning) + " |\n";
  }
  return out;
}

}  // namespace

std::string help_text() {
  return "Environment read by the ranks (each HOROVODCPP_X may also be given as\n"
         "HOROVOD_X, Horovod's name; the HOROVODCPP_ name wins):\n" +
         help_entries(Scope::kRank) +
         "Set by hvdrun for every rank (Gloo mode; hvdrun also sets HOROVOD_RANK, ...,\n"
         "HOROVOD_HOSTNAME for scripts that shard their data before init()):\n" +
         help_entries(Scope::kSetByHvdrun) + "Environment read by hvdrun:\n" +
         help_entries(Scope::kLauncher) +
         "Horovod's knobs accepted with no effect (rank 0 warns once, saying what\n"
         "horovodcpp does instead, when one is set to another value than the default):\n" +
         help_entries(Scope::kNoEffect);
}

std::string markdown() {
  return "### Read by the ranks\n\n" + markdown_table(Scope::kRank) +
         "\n### Set by hvdrun for every rank\n\n" + markdown_table(Scope::kSetByHvdrun) +
         "\n### Read by hvdrun\n\n" + markdown_table(Scope::kLauncher) +
         "\n### Accepted from Horovod, no effect\n\nHorovod's tuning knobs that job scripts "
         "set. Any value is accepted; one set to another value than the default (what "
         "horovodcpp does) makes rank 0 log one warning line at `init()` saying what "
         "horovodcpp does instead (the meaning column).\n\n" +
         markdown_table(Scope::kNoEffect);
}

}  // namespace settings
}  // namespace hvd

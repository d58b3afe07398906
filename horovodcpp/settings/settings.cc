// The typed readers: one parser per type, one rule set each.
#include "settings/settings.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "horovodcpp/errors.h"

namespace hvd {
namespace settings {
namespace {

// The text a setting takes, and the variable it came from (for errors).
struct Found {
  std::string variable;
  std::string text;
};

std::optional<Found> find(Setting setting, const Lookup& lookup) {
  for (const std::string& name : {variable(setting), horovod_variable(setting)}) {
    if (auto text = lookup(name)) return Found{name, *text};
  }
  return std::nullopt;
}

// Set, else the fallback's (as it is set or defaults), else the default.
std::optional<Found> resolve(Setting setting, const Lookup& lookup) {
  if (auto found = find(setting, lookup)) return found;
  const Entry& e = entry(setting);
  if (e.fallback) return resolve(*e.fallback, lookup);
  if (*e.default_value != '\0')
    return Found{"the default of " + variable(setting), e.default_value};
  return std::nullopt;
}

const Entry& typed(Setting setting, std::initializer_list<Type> types) {
  const Entry& e = entry(setting);
  for (Type type : types) {
    if (e.type == type) return e;
  }
  throw std::logic_error(variable(setting) + " is not read as this type");
}

Found required(Setting setting, const Lookup& lookup) {
  if (auto found = resolve(setting, lookup)) return *found;
  throw std::logic_error(variable(setting) + " has no default: check is_set() first");
}

[[noreturn]] void refuse(const Found& found, const std::string& rule) {
  throw InvalidArgument(found.variable + "='" + found.text + "' " + rule);
}

// The entry a found value belongs to (the fallback's, where it came from there).
const Entry& owner(Setting setting, const Found& found) {
  const Entry& e = entry(setting);
  if (e.fallback && found.variable != variable(setting) &&
      found.variable != horovod_variable(setting)) {
    return owner(*e.fallback, found);
  }
  return e;
}

void check_range(const Found& found, double value, const Entry& e, const char* unit) {
  if (value < e.min || value > e.max) {
    refuse(found, "is out of range: must be between " + number_str(e.min) + " and " +
                      number_str(e.max) + unit);
  }
}

long long parse_integer(const Found& found) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(found.text.c_str(), &end, 10);
  if (found.text.empty() || *end != '\0' || errno == ERANGE) refuse(found, "is not an integer");
  return value;
}

double parse_number(const Found& found) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(found.text.c_str(), &end);
  if (found.text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value)) {
    refuse(found, "is not a number");
  }
  return value;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::string number_str(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

const Entry& entry(Setting setting) { return table().at(static_cast<std::size_t>(setting)); }

std::string variable(Setting setting) { return std::string("HOROVODCPP_") + entry(setting).name; }

std::string horovod_variable(Setting setting) {
  return std::string("HOROVOD_") + entry(setting).name;
}

const Lookup& process_environment() {
  static const Lookup lookup = [](const std::string& name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name.c_str())) return std::string(value);
    return std::nullopt;
  };
  return lookup;
}

std::optional<std::string> read_text(Setting setting, const Lookup& lookup) {
  if (auto found = find(setting, lookup)) return found->text;
  return std::nullopt;
}

bool is_set(Setting setting, const Lookup& lookup) { return find(setting, lookup).has_value(); }

std::vector<std::string> no_effect_warnings(const Lookup& lookup) {
  std::vector<std::string> lines;
  for (const Entry& e : table()) {
    if (e.scope != Scope::kNoEffect) continue;
    const auto found = find(e.id, lookup);
    // Set to what horovodcpp does anyway: nothing to say.
    if (!found || (*e.default_value != '\0' && found->text == e.default_value)) continue;
    lines.push_back(found->variable + "=" + found->text +
                    " is accepted and has no effect: " + e.doc);
  }
  return lines;
}

// As Horovod's flags: a whole number, 0 off, more than 0 on.
bool read_bool(Setting setting, const Lookup& lookup) {
  typed(setting, {Type::kBool});
  const Found found = required(setting, lookup);
  const long long value = parse_integer(found);
  if (value < 0) refuse(found, "is not 0 (off) or a number > 0 (on)");
  return value > 0;
}

long long read_int(Setting setting, const Lookup& lookup) {
  typed(setting, {Type::kInt, Type::kBytes});
  const Found found = required(setting, lookup);
  const long long value = parse_integer(found);
  check_range(found, static_cast<double>(value), owner(setting, found), "");
  return value;
}

double read_milliseconds(Setting setting, const Lookup& lookup) {
  typed(setting, {Type::kMilliseconds});
  const Found found = required(setting, lookup);
  const double value = parse_number(found);
  check_range(found, value, owner(setting, found), " milliseconds");
  return value;
}

// Every "seconds" setting: a number (fractions allowed), never negative; 0
// only where the setting gives it a meaning (zero_means), e.g. "off".
double read_seconds(Setting setting, const Lookup& lookup) {
  typed(setting, {Type::kSeconds});
  const Found found = required(setting, lookup);
  const Entry& e = owner(setting, found);
  const double value = parse_number(found);
  if (value == 0 && e.zero_means == nullptr) refuse(found, "must be more than 0 seconds");
  check_range(found, value, e, " seconds");
  return value;
}

std::string read_string(Setting setting, const Lookup& lookup) {
  const Entry& e = typed(setting, {Type::kString, Type::kEnum});
  const std::optional<Found> found = resolve(setting, lookup);
  // An empty value is no choice (as unset), as in Horovod.
  if (!found || e.type == Type::kString || found->text.empty()) return found ? found->text : "";
  const std::string value = lower(found->text);
  std::istringstream choices(e.choices);
  std::string choice;
  std::string allowed;
  while (std::getline(choices, choice, '|')) {
    if (choice == value) return value;
    allowed += (allowed.empty() ? "" : ", ") + choice;
  }
  refuse(*found, "is not one of " + allowed);
}

std::chrono::milliseconds timeout_of(double seconds) {
  return std::max(std::chrono::milliseconds(static_cast<long long>(seconds * 1000 + 0.5)),
                  std::chrono::milliseconds(1));
}

}  // namespace settings
}  // namespace hvd

#include "runner/ranks/flight_recorder_analysis.h"

#include <dirent.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

namespace hvdrun {
namespace {

const char kFilePrefix[] = "horovodcpp-flight-recorder.rank";

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) fields.push_back(field);
  if (!line.empty() && line.back() == '\t') fields.push_back("");
  return fields;
}

// "rank 3", "ranks 0-2", "ranks 0, 2, 5".
std::string ranks_text(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  bool consecutive = true;
  for (std::size_t i = 1; i < ranks.size(); ++i) consecutive &= ranks[i] == ranks[i - 1] + 1;
  if (consecutive) {
    return "ranks " + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  }
  std::string text = "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::string clock_text(long long us) {
  if (us <= 0) return "?";
  const std::time_t seconds = static_cast<std::time_t>(us / 1000000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  char millis[8];
  std::snprintf(millis, sizeof millis, ".%03lld", (us / 1000) % 1000);
  return std::string(text) + millis;
}

// Still in flight when the rank dumped: not completed, and not failed on
// its own account (an error other than the one the rank stopped with).
bool waiting(const FlightRecord& record, const FlightDump& dump) {
  if (record.state == "completed") return false;
  if (record.state != "failed") return true;
  return dump.reason.compare(0, record.error.size(), record.error) == 0;
}

const FlightRecord* last_completed(const FlightDump& dump) {
  for (auto it = dump.records.rbegin(); it != dump.records.rend(); ++it) {
    if (it->state == "completed") return &*it;
  }
  return nullptr;
}

std::string record_text(const FlightRecord& record) {
  return record.name + " (#" + std::to_string(record.number) + ")";
}

}  // namespace

std::optional<FlightDump> parse_flight_dump(std::istream& in) {
  FlightDump dump;
  std::string line;
  if (!std::getline(in, line) || line != "horovodcpp flight recorder 1") return std::nullopt;
  if (!std::getline(in, line)) return std::nullopt;
  {
    std::istringstream header(line);
    std::string word, pid;
    header >> word >> dump.rank >> word >> dump.size >> word >> pid >> word >> dump.host;
    if (!header || dump.rank < 0 || dump.size < 1) return std::nullopt;
  }
  if (!std::getline(in, line) || line.rfind("dumped_us ", 0) != 0) return std::nullopt;
  dump.dumped_us = std::atoll(line.c_str() + 10);
  if (!std::getline(in, line) || line.rfind("reason ", 0) != 0) return std::nullopt;
  dump.reason = line.substr(7);
  if (!std::getline(in, line)) return std::nullopt;  // the column names
  bool ended = false;
  while (std::getline(in, line)) {
    if (line == "end") {
      ended = true;
      break;
    }
    const std::vector<std::string> f = split_tabs(line);
    if (f.size() < 17) return std::nullopt;
    FlightRecord record;
    record.number = std::strtoull(f[0].c_str(), nullptr, 10);
    record.name = f[1];
    record.op = f[2];
    record.process_set = std::atoi(f[8].c_str());
    record.state = f[11];
    record.submitted_us = std::atoll(f[12].c_str());
    record.done_us = std::atoll(f[15].c_str());
    record.error = f[16];
    dump.records.push_back(std::move(record));
  }
  if (!ended) return std::nullopt;  // cut short
  return dump;
}

std::map<int, FlightDump> read_flight_dumps(const std::string& directory) {
  std::map<int, FlightDump> dumps;
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return dumps;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(kFilePrefix, 0) != 0 || name.size() < 4 ||
        name.compare(name.size() - 4, 4, ".txt") != 0) {
      continue;
    }
    std::ifstream in(directory + "/" + name);
    if (std::optional<FlightDump> dump = parse_flight_dump(in)) {
      dumps[dump->rank] = std::move(*dump);
    }
  }
  closedir(dir);
  return dumps;
}

std::vector<std::string> analyze_flight_dumps(const std::map<int, FlightDump>& dumps, int size) {
  std::vector<std::string> lines;
  if (dumps.empty()) return {"no flight recorder dump"};
  if (size <= 0) size = dumps.begin()->second.size;

  // The last collective every rank completed: of the names every dumped
  // rank completed, the one whose latest completion on the slowest rank
  // is the latest.
  std::map<std::string, std::pair<long long, const FlightRecord*>> common;
  bool first = true;
  for (const auto& [rank, dump] : dumps) {
    std::map<std::string, const FlightRecord*> latest;
    for (const FlightRecord& record : dump.records) {
      if (record.state == "completed") latest[record.name] = &record;
    }
    std::map<std::string, std::pair<long long, const FlightRecord*>> kept;
    for (const auto& [name, record] : latest) {
      if (first) {
        kept[name] = {record->done_us, record};
      } else if (auto it = common.find(name); it != common.end()) {
        kept[name] = {std::min(it->second.first, record->done_us), it->second.second};
      }
    }
    common = std::move(kept);
    first = false;
  }
  const auto last = std::max_element(
      common.begin(), common.end(),
      [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  if (last != common.end()) {
    lines.push_back("last collective every rank completed: " + record_text(*last->second.second) +
                    " on rank " + std::to_string(dumps.begin()->first) + ", by " +
                    clock_text(last->second.first));
  } else {
    lines.push_back("no collective that every rank completed is in the dumps");
  }

  // What each rank waits in.
  struct Waiter {
    int rank;
    const FlightRecord* record;
  };
  std::map<std::string, std::vector<Waiter>> waiters;  // by name
  std::map<int, const FlightRecord*> first_wait;       // by rank
  for (const auto& [rank, dump] : dumps) {
    std::set<std::string> seen;
    for (const FlightRecord& record : dump.records) {
      if (!waiting(record, dump) || !seen.insert(record.name).second) continue;
      waiters[record.name].push_back({rank, &record});
      if (!first_wait.count(rank)) first_wait[rank] = &record;
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, list] : waiters) names.push_back(name);
  const auto since = [&](const std::string& name) {
    long long earliest = 0;
    for (const Waiter& w : waiters[name]) {
      if (w.record->submitted_us > 0 && (earliest == 0 || w.record->submitted_us < earliest)) {
        earliest = w.record->submitted_us;
      }
    }
    return earliest;
  };
  std::sort(names.begin(), names.end(),
            [&](const std::string& a, const std::string& b) { return since(a) < since(b); });
  std::set<std::pair<std::string, std::string>> crossed;  // each name's waiters lack the other
  for (const std::string& name : names) {
    std::vector<int> in, missing;
    std::set<int> sets;
    for (const Waiter& w : waiters[name]) {
      in.push_back(w.rank);
      sets.insert(w.record->process_set);
    }
    for (const auto& [rank, dump] : dumps) {
      if (std::find(in.begin(), in.end(), rank) == in.end()) missing.push_back(rank);
    }
    const FlightRecord& shown = *waiters[name].front().record;
    std::string line =
        ranks_text(in) + (in.size() == 1 ? " waits in " : " wait in ") + record_text(shown);
    // (No time: submitted while the coordinator was stuck, never taken up.)
    if (since(name) > 0) line += " since " + clock_text(since(name));
    if (!missing.empty()) {
      // What the ranks that never submitted it do instead, grouped.
      std::map<std::string, std::vector<int>> instead;
      for (int m : missing) {
        if (first_wait.count(m)) {
          instead["waiting in " + first_wait[m]->name].push_back(m);
          crossed.insert(std::minmax(name, first_wait[m]->name));
        } else if (const FlightRecord* done = last_completed(dumps.at(m))) {
          instead["stopped submitting after " + record_text(*done)].push_back(m);
        } else {
          instead["with no collective recorded"].push_back(m);
        }
      }
      line += "; never submitted by " + ranks_text(missing) + ":";
      for (const auto& [what, ranks] : instead) line += " " + ranks_text(ranks) + " " + what + ";";
      line.pop_back();
    }
    if (sets.size() > 1) {
      line += "; on different process sets:";
      for (const Waiter& w : waiters[name]) {
        line += " rank " + std::to_string(w.rank) + " set " + std::to_string(w.record->process_set);
      }
    }
    lines.push_back(line);
  }
  for (const auto& [a, b] : crossed) {
    std::vector<int> in_a, in_b;
    for (const Waiter& w : waiters[a]) in_a.push_back(w.rank);
    for (const Waiter& w : waiters[b]) in_b.push_back(w.rank);
    lines.push_back(ranks_text(in_a) + " in " + a + " and " + ranks_text(in_b) + " in " + b +
                    " each wait for the other: collectives submitted in different orders (or "
                    "one skipped)");
  }
  for (const auto& [rank, dump] : dumps) {
    if (first_wait.count(rank)) continue;
    const FlightRecord* done = last_completed(dump);
    lines.push_back(
        "rank " + std::to_string(rank) + " waited in no collective" +
        (done ? " (its last: " + record_text(*done) + " at " + clock_text(done->done_us) + ")"
              : std::string()));
  }
  std::vector<int> absent;
  for (int r = 0; r < size; ++r) {
    if (!dumps.count(r)) absent.push_back(r);
  }
  if (!absent.empty()) {
    lines.push_back("no dump from " + ranks_text(absent) +
                    " (killed, stopped, or it could not write one)");
  }
  for (const auto& [rank, dump] : dumps) {
    if (dump.reason.rfind("SIGUSR1", 0) == 0 || dump.reason == "on demand") continue;
    lines.push_back("rank " + std::to_string(rank) + " dumped on: " + dump.reason);
    break;  // one is enough: the others said the same or failed with it
  }
  return lines;
}

int analyze_command(const std::string& directory) {
  const std::map<int, FlightDump> dumps = read_flight_dumps(directory);
  if (dumps.empty()) {
    std::cerr << "hvdrun: no flight recorder dump (" << kFilePrefix << "<R>.txt) in " << directory
              << "\n";
    return 1;
  }
  for (const std::string& line : analyze_flight_dumps(dumps)) std::cout << line << "\n";
  return 0;
}

}  // namespace hvdrun

#include "runner/ranks/output_lines.h"

#include <cctype>
#include <ctime>

namespace hvdrun {
namespace {

// "[digits,digits]<word>:" at `at`; its length, or 0.
std::size_t tag_length_at(const std::string& text, std::size_t at) {
  std::size_t i = at;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i > start;
  };
  if (i >= text.size() || text[i++] != '[' || !digits()) return 0;
  if (i >= text.size() || text[i++] != ',' || !digits()) return 0;
  if (i + 1 >= text.size() || text[i] != ']' || text[i + 1] != '<') return 0;
  i += 2;
  const std::size_t word = i;
  while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
  if (i == word || i + 1 >= text.size() || text[i] != '>' || text[i + 1] != ':') return 0;
  return i + 2 - at;
}

// "  3: " (spaces, digits, colon, space) at the start of `text`: its
// length, or 0.
std::size_t srun_label_length(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  const std::size_t digits = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == digits || i + 1 >= text.size() || text[i] != ':' || text[i + 1] != ' ') return 0;
  return i + 2;
}

std::string local_time() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  const std::size_t n = std::strftime(text, sizeof text, "%a %b %d %H:%M:%S %Y", &local);
  return std::string(text, n);
}

}  // namespace

std::size_t find_mpirun_tag(const std::string& text, std::size_t from, std::size_t* length) {
  for (std::size_t at = text.find('[', from); at != std::string::npos;
       at = text.find('[', at + 1)) {
    if (const std::size_t n = tag_length_at(text, at)) {
      *length = n;
      return at;
    }
  }
  return std::string::npos;
}

OutputLines::OutputLines(std::string prefix, bool mpirun_tags, bool timestamps)
    : prefix_(std::move(prefix)), mpirun_tags_(mpirun_tags), timestamps_(timestamps) {}

OutputLines OutputLines::srun_labels(std::string stream, bool timestamps) {
  OutputLines lines("", false, timestamps);
  lines.srun_stream_ = std::move(stream);
  return lines;
}

void OutputLines::emit(const std::string& tag, const std::string& text, std::string& out,
                       const Seen* seen) const {
  if (timestamps_) out += local_time();
  if (const std::size_t n = srun_stream_.empty() ? 0 : srun_label_length(text)) {
    const std::string rank = text.substr(0, n - 2);
    const std::string rest = text.substr(n);
    out += "[" + rank.substr(rank.find_first_not_of(' ')) + "]" + srun_stream_ + rest + "\n";
    if (seen && *seen) (*seen)(rest);
    return;
  }
  out += prefix_ + tag + text + "\n";
  if (seen && *seen) (*seen)(text);
}

std::string OutputLines::feed(const std::string& bytes, bool at_end, const Seen* seen,
                              Clock::time_point now) {
  if (raw_.empty()) raw_since_ = now;
  raw_ += bytes;
  std::string out;
  split(at_end, now, out, seen);
  return out;
}

std::string OutputLines::flush_stale(Clock::time_point now, const Seen* seen) {
  std::string out;
  if (!raw_.empty() && now - raw_since_ >= kMaxHeldTime) split(true, now, out, seen);
  for (auto it = pieces_.begin(); it != pieces_.end();) {
    if (now - it->second.since >= kMaxHeldTime) {
      emit(it->first, it->second.text, out, seen);
      it = pieces_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

// Each tag starts a piece of that rank's output, which runs to its newline
// (the line is complete) or to the next tag (more of it comes later). Text
// before any tag is mpirun's own, a line like any other; without
// mpirun_tags all of it is.
void OutputLines::split(bool at_end, Clock::time_point now, std::string& out, const Seen* seen) {
  std::size_t pos = 0;
  while (pos < raw_.size()) {
    std::size_t tag_length = 0;
    std::string tag;
    std::size_t text = pos;
    if (std::size_t n = mpirun_tags_ ? tag_length_at(raw_, pos) : 0) {
      tag = raw_.substr(pos, n);
      text = pos + n;
    }
    const std::size_t nl = raw_.find('\n', text);
    const std::size_t next =
        mpirun_tags_ ? find_mpirun_tag(raw_, text, &tag_length) : std::string::npos;
    std::string rest;
    if (nl != std::string::npos && (next == std::string::npos || nl < next)) {
      rest = raw_.substr(text, nl - text);
      pos = nl + 1;
    } else if (next != std::string::npos || at_end || raw_.size() - pos > kMaxHeldBytes) {
      const std::size_t end = next != std::string::npos ? next : raw_.size();
      Piece& piece = pieces_[tag];
      if (piece.text.empty()) piece.since = raw_since_;
      piece.text += raw_.substr(text, end - text);
      pos = end;
      if (next == std::string::npos || piece.text.size() > kMaxHeldBytes) {
        emit(tag, piece.text, out, seen);
        pieces_.erase(tag);
      }
      continue;
    } else {
      break;  // the piece (or its tag) may go on in the next read
    }
    auto held = pieces_.find(tag);
    if (held != pieces_.end()) {
      rest = held->second.text + rest;
      pieces_.erase(held);
    }
    emit(tag, rest, out, seen);
  }
  if (pos > 0) raw_since_ = now;
  raw_.erase(0, pos);
  if (!at_end) return;
  for (const auto& [tag, piece] : pieces_) emit(tag, piece.text, out, seen);
  pieces_.clear();
}

}  // namespace hvdrun

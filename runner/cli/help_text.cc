// hvdrun --help: the flags, generated from the flag table (runner/flags.cc),
// then the environment variables the ranks and hvdrun read, generated from
// the table of settings (horovodcpp/settings).
#include <sstream>

#include "runner/cli/flags.h"
#include "runner/cli/options.h"
#include "settings/settings_doc.h"

namespace hvdrun {
namespace {

constexpr std::size_t kHelpColumn = 29;
constexpr std::size_t kWidth = 79;

// "  -np N, --num-proc N" padded to the help column, or on a line of its own.
std::string flag_column(const Flag& flag) {
  std::string left = " ";
  for (const std::string& s : flag.spellings) {
    left += (left.size() > 1 ? ", " : " ") + s + (flag.metavar.empty() ? "" : " " + flag.metavar);
  }
  if (left.size() + 2 > kHelpColumn) return left + "\n" + std::string(kHelpColumn, ' ');
  return left + std::string(kHelpColumn - left.size(), ' ');
}

// `text` wrapped at kWidth, continuation lines indented to the help column.
std::string wrapped(const std::string& text) {
  std::istringstream words(text);
  std::string out, word;
  std::size_t column = kHelpColumn;
  while (words >> word) {
    if (column > kHelpColumn && column + 1 + word.size() > kWidth) {
      out += "\n" + std::string(kHelpColumn, ' ');
      column = kHelpColumn;
    } else if (column > kHelpColumn) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out + "\n";
}

std::string flags_text() {
  std::string out, section;
  for (const Flag& flag : flag_table()) {
    if (flag.section != section) {
      section = flag.section;
      out += "\n" + section + ":\n";
    }
    std::string help = flag.help;
    if (!flag.config_key.empty()) {
      help += " [" + flag.config_key + (flag.config_value.empty() ? "" : ": " + flag.config_value) +
              "]";
    }
    out += flag_column(flag) + wrapped(help);
  }
  return out;
}

}  // namespace

std::string help_text() {
  return R"(usage: hvdrun -np N [options] command [args...]

Launches N copies of `command` as one horovodcpp job: through mpirun (MPI
mode) or by starting every rank itself (Gloo mode). Options end at the first
word that is not an option (or at "--"); the rest is the command. Every flag
of horovodrun 0.28.1 is accepted: tuning flags horovodcpp has no use for set
their variable and rank 0 says what it does instead; only --jsrun fails, with
the reason. In [brackets]: the flag's key in a --config-file.
)" + flags_text() +
         "\n" + hvd::settings::help_text() + R"(  HVDRUN_REMOTE_SHELL=TEXT
      Default for --remote-shell.
  SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE, SLURM_NTASKS, PBS_NODEFILE
      The allocation's hosts and slots. Inside a Slurm allocation the ranks
      start through srun, never ssh (Gloo: one srun step; MPI: mpirun -mca
      plm slurm), unless --remote-shell is given.

Exit status: the job's (0 only if every rank succeeded); 2 for usage errors.
)";
}

}  // namespace hvdrun

// hvdrun's elastic mode (--min-np, --max-np, --host-discovery-script): the
// rendezvous store, the worker processes' command lines and the
// ElasticDriver (elastic_driver.h) that decides which of them form the job.
#pragma once

#include <map>
#include <string>

#include "runner/cli/options.h"

namespace hvdrun {

// Runs the elastic job to its end; its exit code.
int run_gloo_elastic(const Options& options, const std::map<std::string, std::string>& env);

}  // namespace hvdrun

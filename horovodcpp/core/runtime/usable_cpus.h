// How many CPUs this process may run on: whether a rank that waits can
// afford to spin (only while every rank of the host has a core).
#pragma once

namespace hvd {

// The CPUs in this process's affinity mask (else those online; at least 1).
int usable_cpus();

}  // namespace hvd

// Elastic jobs: hvdrun --min-np / --max-np / --host-discovery-script starts
// the ranks so that the job survives losing and gaining them (docs/elastic.md).
// A rank that dies makes its peers' pending operations fail with
// hvd::RankFailure; each survivor then calls shutdown() and init(), which
// joins the next membership hvdrun publishes (ranks renumbered, the size may
// differ), and re-broadcasts its state from the new rank 0, a survivor.
//
//   for (;;) {
//     try { train(); break; }
//     catch (const hvd::RankFailure&) { restore_last_commit(); }
//     hvd::shutdown(); hvd::init(); broadcast_state(0);
//   }
//
// The Python front ends wrap this loop (hvd.elastic.run and the State classes).
#pragma once

#include "horovodcpp/export.h"

namespace hvd {

// True when hvdrun started this process as an elastic job's worker.
HVD_EXPORT bool elastic_enabled();
// The membership round this process's runtime last joined (0: none, or not
// an elastic job).
HVD_EXPORT long long elastic_round();
// True when hvdrun has published a newer membership than the one joined
// (hosts were added or removed): every rank should reach a common point,
// then shutdown() and init() to join it. Asks hvdrun's store, so call it on
// one rank and broadcast the answer. False outside an elastic job.
HVD_EXPORT bool elastic_hosts_updated();

}  // namespace hvd

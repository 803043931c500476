// soak_client.h: one client process of the kill -9 soak (soak.cc starts
// --clients of them with --client=N): --client_threads threads send mixed
// CheckUrl, CompleteUrls, CheckContent and CheckChunks calls to the server
// whose port is in the work directory, reconnecting across its kills, and
// append every acknowledged write to the work directory's ack files for the
// coordinator to check.
//
// Example:
//   return RunSoakClient(n, work_dir, seed, start_unix_ms, end_unix_ms);
#ifndef DEDUPD_BENCH_LOAD_SOAK_CLIENT_H_
#define DEDUPD_BENCH_LOAD_SOAK_CLIENT_H_

#include <cstdint>
#include <string>

namespace dedupd::bench {

// RunSoakClient runs client number `client` until `end_unix_ms`; returns
// its exit code. Reads the soak's flags (soak.cc defines them).
int RunSoakClient(int client, const std::string& work, uint64_t seed, int64_t start_unix_ms,
                  int64_t end_unix_ms);

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_LOAD_SOAK_CLIENT_H_

// redis_cluster_fixture.h: a real Redis Cluster for tests: N masters with R replicas
// each (default 3 + 3), every node a redis-server child process on
// 127.0.0.1 at free ports with its own temporary directory, joined with
// `redis-cli --cluster create`. Start() returns once every node reports
// cluster_state:ok with all 16384 slots assigned and every replica's link to
// its master is up. Nodes are stopped by PID (SIGKILL) in the destructor.
// Needs redis-server and redis-cli (Debian's redis-server package,
// scripts/install-deps.sh); tests that use it carry the ctest label `redis`.
//
// With options.tls, every node listens with TLS only (`port 0`, `tls-port`;
// Debian's redis-server is built with TLS), and the cluster bus and
// replication use TLS too; the certificates (a CA, a server certificate
// for 127.0.0.1, a client certificate) are made by the fixture in its
// temporary directory (tests/testing/test_certs.h). Clients verify the
// nodes against tls().ca_pem; with options.tls_auth_clients the nodes
// require a client certificate signed by that CA (tls().client_*).
//
// Example:
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster, RedisCluster::Start({}));
//   std::string seed = cluster->address(0);  // "127.0.0.1:PORT"
//   ASSERT_OK_AND_ASSIGN(std::string info, cluster->Cli(0, {"CLUSTER", "INFO"}));
//   ASSERT_THAT(cluster->KillNode(0), IsOk());  // kill -9, as a crash would
//   ASSERT_THAT(cluster->StopNode(1), IsOk());  // kill -STOP, as a hung node
//   ASSERT_THAT(cluster->ContinueNode(1), IsOk());
//
// Thread safety: not thread-safe; use from one thread.
#ifndef DEDUPD_TESTS_TESTING_REDIS_CLUSTER_FIXTURE_H_
#define DEDUPD_TESTS_TESTING_REDIS_CLUSTER_FIXTURE_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dedupd::testing {

class RedisCluster {
 public:
  struct Options {
    // Number of masters; the slots are split evenly among them.
    // Default: 3 (the fewest redis-cli --cluster create accepts).
    int masters = 3;
    // Replicas per master. Default: 1.
    int replicas_per_master = 1;
    // How long a node may be unreachable before the cluster fails it over,
    // in milliseconds (cluster-node-timeout). Default: 1000.
    int node_timeout_ms = 1000;
    // Bound on the whole start: processes up, cluster created, state ok.
    // Default: 30 s.
    absl::Duration start_timeout = absl::Seconds(30);
    // Listen with TLS only (see the top). Default: false.
    bool tls = false;
    // With tls: nodes require a client certificate signed by the CA
    // (tls-auth-clients yes); else a client without one is accepted, and
    // one that presents one must chain to the CA (tls-auth-clients
    // optional). Default: false.
    bool tls_auth_clients = false;
    // Default: Debian's paths.
    std::string server_binary = "/usr/bin/redis-server";
    std::string cli_binary = "/usr/bin/redis-cli";
  };

  // Start starts the cluster. Errors: FailedPrecondition when redis-server
  // or redis-cli is missing; DeadlineExceeded when it is not healthy within
  // options.start_timeout; Internal/Unavailable for a node that failed, with
  // the tail of its log. Every process started is stopped on error.
  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start(const Options& options);

  // Stops every node still running (SIGKILL by PID, reaped) and removes the
  // nodes' directories.
  ~RedisCluster();

  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // The fixture's certificates (options.tls), PEM contents and the files
  // that hold them; empty without TLS.
  struct TlsMaterial {
    std::string ca_pem, ca_file;
    std::string client_cert_pem, client_cert_file;
    std::string client_key_pem, client_key_file;
  };
  const TlsMaterial& tls() const { return tls_; }

  // Nodes are numbered 0..size()-1 in the order given to --cluster create.
  size_t size() const { return nodes_.size(); }
  int port(size_t i) const { return nodes_[i].port; }
  pid_t pid(size_t i) const { return nodes_[i].pid; }
  std::string address(size_t i) const;  // "127.0.0.1:PORT"
  std::vector<std::string> addresses() const;
  // Whether node i was a master when Start() returned (roles change on
  // failover; ask the node for its current one).
  bool started_as_master(size_t i) const { return nodes_[i].master; }
  bool running(size_t i) const { return nodes_[i].pid > 0; }

  // KillNode sends SIGKILL to node i and reaps it. FailedPrecondition when
  // it is not running.
  absl::Status KillNode(size_t i);

  // StopNode sends SIGSTOP to node i: it keeps its port and accepts
  // connections (the kernel does), but answers nothing, as a hung or
  // partitioned node would, until ContinueNode sends SIGCONT. Commands
  // queued meanwhile run then. Stopped longer than the cluster's
  // node_timeout_ms, the node is failed over. The destructor kills a
  // stopped node as any other. FailedPrecondition when it is not running.
  absl::Status StopNode(size_t i);
  absl::Status ContinueNode(size_t i);

  // Cli runs `redis-cli -h 127.0.0.1 -p PORT(i) args...` (with --tls and
  // the fixture's CA and client certificate under options.tls) and returns its
  // stdout. Errors: DeadlineExceeded after `timeout`; Unavailable when
  // redis-cli fails (its stderr in the message). A Redis error reply is
  // output, not an error.
  absl::StatusOr<std::string> Cli(size_t i, const std::vector<std::string>& args,
                                  absl::Duration timeout = absl::Seconds(10)) const;

  // NodeId returns node i's 40-character cluster id (CLUSTER MYID).
  absl::StatusOr<std::string> NodeId(size_t i) const;

  // SlotOwner returns the index of the master serving `slot` as the first
  // running node answers CLUSTER NODES. NotFound when no master lists it.
  absl::StatusOr<size_t> SlotOwner(int slot) const;

  // Slot migration, the steps `redis-cli --cluster reshard` takes (Redis
  // Cluster specification, "Live resharding"), split so a test can stop
  // between them: BeginSlotMigration marks `slot` IMPORTING at `to` and
  // MIGRATING at `from` (from now on `from` answers ASK for keys it no
  // longer has); MigrateKey moves one key (MIGRATE); FinishSlotMigration
  // moves the keys left and assigns the slot to `to` on `to`, `from` and
  // every other running node that started as a master (they answer MOVED
  // from then on). MigrateSlot does all three. Errors: Unavailable with
  // the reply when a step is refused.
  absl::Status BeginSlotMigration(int slot, size_t from, size_t to) const;
  absl::Status MigrateKey(size_t from, size_t to, const std::string& key) const;
  absl::Status FinishSlotMigration(int slot, size_t from, size_t to) const;
  absl::Status MigrateSlot(int slot, size_t from, size_t to) const;

  // LogTail returns the last `max_bytes` of node i's log file.
  std::string LogTail(size_t i, size_t max_bytes = 2000) const;

 private:
  struct Node {
    int port = 0;
    int bus_port = 0;
    pid_t pid = -1;
    std::string dir;
    bool master = false;
  };

  explicit RedisCluster(Options options) : options_(std::move(options)) {}
  absl::Status StartNode(Node& node, std::vector<int>& taken);
  // MakeTlsMaterial makes the certificates and writes the files (tls_).
  absl::Status MakeTlsMaterial();
  // CliTlsArgs: redis-cli's TLS flags, or none without TLS.
  std::vector<std::string> CliTlsArgs() const;
  absl::Status WaitForPing(size_t i, absl::Time deadline);
  // NotReadyReason returns "" when node i is healthy, else why not.
  std::string NotReadyReason(size_t i, absl::Time deadline);

  Options options_;
  std::string base_dir_;
  TlsMaterial tls_;
  std::string server_cert_file_, server_key_file_;
  std::vector<Node> nodes_;
};

// SharedCluster returns the process's one cluster, started with `options`
// on the first call (later calls' options are ignored) and kept until the
// process exits, so the cases of a test binary run as one ctest test
// (dedupd_test(... WHOLE ...)) start it once; null, after a test failure
// saying why, when it cannot start. Thread-safe.
RedisCluster* SharedCluster(const RedisCluster::Options& options = {});
// SharedTlsCluster is SharedCluster of a TLS-only cluster that requires
// client certificates (Options::tls and tls_auth_clients).
RedisCluster* SharedTlsCluster();

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_REDIS_CLUSTER_FIXTURE_H_

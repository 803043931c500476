#include "tests/testing/redis_cluster_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_certs.h"

namespace dedupd::testing {
namespace {

constexpr int kSlotCount = 16384;
// Ports are drawn below Linux's ephemeral range (32768-60999), so an
// outgoing connection cannot take one between the check and the bind.
constexpr int kFirstPort = 20000;
constexpr int kPortSpan = 12000;
// Between polls of a node that is not ready yet; every poll loop is bounded
// by a deadline.
constexpr absl::Duration kPollInterval = absl::Milliseconds(50);

// PortIsFree: nothing listens on (or holds) 127.0.0.1:port. SO_REUSEADDR as
// redis-server sets it, so a port in TIME_WAIT counts as free, as it is for
// redis-server.
bool PortIsFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return free;
}

// FreePort returns a free port not in `taken` and adds it there; 0 if none
// was found in 1000 draws.
int FreePort(std::vector<int>& taken) {
  static std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> dist(kFirstPort, kFirstPort + kPortSpan - 1);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = dist(rng);
    if (std::find(taken.begin(), taken.end(), port) != taken.end()) continue;
    if (!PortIsFree(port)) continue;
    taken.push_back(port);
    return port;
  }
  return 0;
}

// Field returns the value of "name:value" in an INFO-style reply, or "".
std::string Field(absl::string_view info, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(info, '\n')) {
    line = absl::StripSuffix(line, "\r");
    if (absl::ConsumePrefix(&line, name) && absl::ConsumePrefix(&line, ":")) {
      return std::string(line);
    }
  }
  return "";
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

}  // namespace

absl::StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Start(const Options& options) {
  for (const std::string& binary : {options.server_binary, options.cli_binary}) {
    if (!Executable(binary)) {
      return absl::FailedPreconditionError(
          absl::StrCat(binary,
                       " not found: the Redis Cluster tests need Debian's redis-server package "
                       "(scripts/install-deps.sh installs it)"));
    }
  }
  if (options.masters < 3) {
    return absl::InvalidArgumentError("redis-cli --cluster create needs at least 3 masters");
  }
  const absl::Time deadline = absl::Now() + options.start_timeout;
  std::unique_ptr<RedisCluster> cluster(new RedisCluster(options));
  cluster->base_dir_ = MakeTempDir("redis_cluster_");
  if (cluster->base_dir_.empty()) return absl::InternalError("cannot create a temporary dir");
  if (options.tls) {
    if (absl::Status s = cluster->MakeTlsMaterial(); !s.ok()) return s;
  }
  const size_t count =
      static_cast<size_t>(options.masters) * static_cast<size_t>(1 + options.replicas_per_master);
  cluster->nodes_.resize(count);
  std::vector<int> taken;

  // Start every process first, then wait for them together: the waits
  // overlap with the other nodes' start-up.
  for (size_t i = 0; i < count; ++i) {
    cluster->nodes_[i].dir = absl::StrCat(cluster->base_dir_, "/node", i);
    if (absl::Status s = cluster->StartNode(cluster->nodes_[i], taken); !s.ok()) return s;
  }
  for (size_t i = 0; i < count; ++i) {
    // A port taken by someone else between the check and redis-server's
    // bind: start that node again on other ports (a few times).
    absl::Status s = cluster->WaitForPing(i, deadline);
    for (int retry = 0; !s.ok() && retry < 3 && absl::StrContains(s.message(), "in use"); ++retry) {
      if (absl::Status r = cluster->StartNode(cluster->nodes_[i], taken); !r.ok()) return r;
      s = cluster->WaitForPing(i, deadline);
    }
    if (!s.ok()) return s;
  }

  // Masters are the first `masters` addresses; redis-cli assigns replicas.
  std::vector<std::string> create = {options.cli_binary};
  for (std::string& arg : cluster->CliTlsArgs()) create.push_back(std::move(arg));
  create.insert(create.end(), {"--cluster", "create"});
  for (size_t i = 0; i < count; ++i) create.push_back(cluster->address(i));
  create.insert(create.end(),
                {"--cluster-replicas", absl::StrCat(options.replicas_per_master), "--cluster-yes"});
  absl::StatusOr<CommandResult> created =
      RunCommand(create, "", std::max(deadline - absl::Now(), absl::Seconds(1)));
  if (!created.ok()) return created.status();
  if (created->exit_code != 0 || absl::StrContains(created->out, "[ERR]")) {
    return absl::UnavailableError(absl::StrCat("redis-cli --cluster create failed (exit ",
                                               created->exit_code, "):\n", created->out,
                                               created->err));
  }

  // Healthy: every node sees state ok, all slots, all nodes; every replica
  // is linked to its master (so a failover test has a synced replica).
  std::string reason;
  for (;;) {
    reason.clear();
    for (size_t i = 0; i < count && reason.empty(); ++i) {
      reason = cluster->NotReadyReason(i, deadline);
    }
    if (reason.empty()) break;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("the Redis cluster was not healthy within ",
                                                      absl::FormatDuration(options.start_timeout),
                                                      ": ", reason));
    }
    absl::SleepFor(kPollInterval);
  }
  return cluster;
}

absl::Status RedisCluster::MakeTlsMaterial() {
  const std::string dir = base_dir_ + "/tls";
  if (mkdir(dir.c_str(), 0700) != 0) {
    return absl::InternalError(absl::StrCat("mkdir ", dir, ": ", std::strerror(errno)));
  }
  absl::StatusOr<TestCert> ca = MakeTestCa("redis cluster test CA");
  if (!ca.ok()) return ca.status();
  // The server certificate names 127.0.0.1 (its subjectAltName), the
  // address every node is reached at.
  absl::StatusOr<TestCert> server = MakeTestLeaf(*ca, "redis node", LeafUse::kServer);
  if (!server.ok()) return server.status();
  absl::StatusOr<TestCert> client = MakeTestLeaf(*ca, "redis client", LeafUse::kClient);
  if (!client.ok()) return client.status();
  tls_.ca_pem = ca->cert_pem;
  tls_.ca_file = dir + "/ca.pem";
  tls_.client_cert_pem = client->cert_pem;
  tls_.client_cert_file = dir + "/client.pem";
  tls_.client_key_pem = client->key_pem;
  tls_.client_key_file = dir + "/client.key";
  server_cert_file_ = dir + "/server.pem";
  server_key_file_ = dir + "/server.key";
  for (const auto& [path, data] : std::vector<std::pair<std::string, std::string>>{
           {tls_.ca_file, tls_.ca_pem},
           {tls_.client_cert_file, tls_.client_cert_pem},
           {tls_.client_key_file, tls_.client_key_pem},
           {server_cert_file_, server->cert_pem},
           {server_key_file_, server->key_pem}}) {
    if (absl::Status s = WriteTestFile(path, data); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::vector<std::string> RedisCluster::CliTlsArgs() const {
  if (!options_.tls) return {};
  return {"--tls", "--cacert",          tls_.ca_file, "--cert", tls_.client_cert_file,
          "--key", tls_.client_key_file};
}

absl::Status RedisCluster::StartNode(Node& node, std::vector<int>& taken) {
  if (node.pid > 0) {
    kill(node.pid, SIGKILL);
    while (waitpid(node.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    node.pid = -1;
  }
  node.port = FreePort(taken);
  node.bus_port = FreePort(taken);
  if (node.port == 0 || node.bus_port == 0) {
    return absl::UnavailableError("no free port for a redis-server node");
  }
  RemoveTree(node.dir);
  if (mkdir(node.dir.c_str(), 0700) != 0) {
    return absl::InternalError(absl::StrCat("mkdir ", node.dir, ": ", std::strerror(errno)));
  }
  // Loopback only; a small node timeout so failover tests take seconds; AOF
  // on (as a durable deployment runs), RDB snapshots off (they only cost
  // time here).
  const std::string conf_path = node.dir + "/redis.conf";
  {
    std::ofstream conf(conf_path);
    conf << "bind 127.0.0.1\n";
    if (options_.tls) {
      // TLS only, for clients, the cluster bus and replication. A node
      // connecting to another (bus, replication) presents the client
      // certificate: the server one is for serverAuth only.
      conf << "port 0\n"
           << "tls-port " << node.port << "\n"
           << "tls-cert-file " << server_cert_file_ << "\n"
           << "tls-key-file " << server_key_file_ << "\n"
           << "tls-client-cert-file " << tls_.client_cert_file << "\n"
           << "tls-client-key-file " << tls_.client_key_file << "\n"
           << "tls-ca-cert-file " << tls_.ca_file << "\n"
           << "tls-auth-clients " << (options_.tls_auth_clients ? "yes" : "optional") << "\n"
           << "tls-cluster yes\n"
           << "tls-replication yes\n";
    } else {
      conf << "port " << node.port << "\n";
    }
    conf << "cluster-enabled yes\n"
         << "cluster-port " << node.bus_port << "\n"
         << "cluster-config-file " << node.dir << "/nodes.conf\n"
         << "cluster-node-timeout " << options_.node_timeout_ms << "\n"
         << "appendonly yes\n"
         // A replica's offset moves (and CLUSTER SLOTS lists it) with the
         // master's pings even when nothing is written: ping every second.
         << "repl-ping-replica-period 1\n"
         << "save \"\"\n"
         << "dir " << node.dir << "\n"
         << "logfile " << node.dir << "/redis.log\n"
         << "daemonize no\n";
    if (!conf) return absl::InternalError(absl::StrCat("cannot write ", conf_path));
  }
  const std::string binary = options_.server_binary;
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // A test that crashes must not leave a cluster behind: the node dies
    // with the process that started it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execl(binary.c_str(), binary.c_str(), conf_path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  node.pid = pid;
  return absl::OkStatus();
}

absl::Status RedisCluster::WaitForPing(size_t i, absl::Time deadline) {
  Node& node = nodes_[i];
  for (;;) {
    int wstatus = 0;
    if (waitpid(node.pid, &wstatus, WNOHANG) == node.pid) {
      node.pid = -1;
      return absl::UnavailableError(absl::StrCat("redis-server on port ", node.port,
                                                 " exited at start; its log:\n", LogTail(i)));
    }
    absl::StatusOr<std::string> pong = Cli(i, {"PING"}, absl::Seconds(5));
    if (pong.ok() && absl::StrContains(*pong, "PONG")) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "redis-server on port ", node.port, " did not answer PING; its log:\n", LogTail(i)));
    }
    absl::SleepFor(kPollInterval);
  }
}

std::string RedisCluster::NotReadyReason(size_t i, absl::Time deadline) {
  const absl::Duration left = std::max(deadline - absl::Now(), absl::Seconds(1));
  absl::StatusOr<std::string> info = Cli(i, {"CLUSTER", "INFO"}, left);
  if (!info.ok()) return absl::StrCat(address(i), ": ", info.status().ToString());
  const std::string state = Field(*info, "cluster_state");
  const std::string assigned = Field(*info, "cluster_slots_assigned");
  const std::string known = Field(*info, "cluster_known_nodes");
  if (state != "ok" || assigned != absl::StrCat(kSlotCount) ||
      known != absl::StrCat(nodes_.size())) {
    return absl::StrCat(address(i), ": cluster_state:", state, " cluster_slots_assigned:", assigned,
                        " cluster_known_nodes:", known);
  }
  // This node's view of the others has converged: every node known with
  // its final role, none in handshake or suspected failing (gossip carries
  // a replica's role to the nodes other than its master only after a
  // while; until then CLUSTER SLOTS lists that master without it).
  absl::StatusOr<std::string> nodes = Cli(i, {"CLUSTER", "NODES"}, left);
  if (!nodes.ok()) return absl::StrCat(address(i), ": ", nodes.status().ToString());
  size_t masters = 0;
  std::vector<std::string> replica_ids;
  for (absl::string_view line : absl::StrSplit(*nodes, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 3) continue;
    for (absl::string_view flag : absl::StrSplit(fields[2], ',')) {
      if (flag == "master") ++masters;
      if (flag == "slave") replica_ids.emplace_back(fields[0]);
      if (flag == "fail?" || flag == "fail" || flag == "handshake" || flag == "noaddr") {
        return absl::StrCat(address(i), ": sees ", fields[1], " as ", fields[2]);
      }
    }
  }
  const size_t want_masters = static_cast<size_t>(options_.masters);
  if (masters != want_masters || replica_ids.size() != nodes_.size() - want_masters) {
    return absl::StrCat(address(i), ": sees ", masters, " masters and ", replica_ids.size(),
                        " replicas");
  }
  // CLUSTER SLOTS lists a replica only once this node has heard (by gossip)
  // a non-zero replication offset for it; a router should see the replicas.
  absl::StatusOr<std::string> slots = Cli(i, {"CLUSTER", "SLOTS"}, left);
  if (!slots.ok()) return absl::StrCat(address(i), ": ", slots.status().ToString());
  for (const std::string& id : replica_ids) {
    if (!absl::StrContains(*slots, id)) {
      return absl::StrCat(address(i), ": CLUSTER SLOTS does not list replica ", id, " yet");
    }
  }
  absl::StatusOr<std::string> replication = Cli(i, {"INFO", "replication"}, left);
  if (!replication.ok()) return absl::StrCat(address(i), ": ", replication.status().ToString());
  const std::string role = Field(*replication, "role");
  nodes_[i].master = role == "master";
  if (role == "slave" && Field(*replication, "master_link_status") != "up") {
    return absl::StrCat(address(i), ": replica's master_link_status is not up");
  }
  if (role != "master" && role != "slave") return absl::StrCat(address(i), ": role ", role);
  return "";
}

RedisCluster::~RedisCluster() {
  for (Node& node : nodes_) {
    if (node.pid <= 0) continue;
    kill(node.pid, SIGKILL);
    while (waitpid(node.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    node.pid = -1;
  }
  if (!base_dir_.empty()) RemoveTree(base_dir_);
}

std::string RedisCluster::address(size_t i) const {
  return absl::StrCat("127.0.0.1:", nodes_[i].port);
}

std::vector<std::string> RedisCluster::addresses() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < nodes_.size(); ++i) out.push_back(address(i));
  return out;
}

absl::Status RedisCluster::KillNode(size_t i) {
  Node& node = nodes_[i];
  if (node.pid <= 0) {
    return absl::FailedPreconditionError(absl::StrCat("node ", i, " is not running"));
  }
  if (kill(node.pid, SIGKILL) != 0) {
    return absl::InternalError(absl::StrCat("kill ", node.pid, ": ", std::strerror(errno)));
  }
  while (waitpid(node.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  node.pid = -1;
  return absl::OkStatus();
}

absl::Status RedisCluster::StopNode(size_t i) {
  Node& node = nodes_[i];
  if (node.pid <= 0) {
    return absl::FailedPreconditionError(absl::StrCat("node ", i, " is not running"));
  }
  if (kill(node.pid, SIGSTOP) != 0) {
    return absl::InternalError(absl::StrCat("kill -STOP ", node.pid, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::ContinueNode(size_t i) {
  Node& node = nodes_[i];
  if (node.pid <= 0) {
    return absl::FailedPreconditionError(absl::StrCat("node ", i, " is not running"));
  }
  if (kill(node.pid, SIGCONT) != 0) {
    return absl::InternalError(absl::StrCat("kill -CONT ", node.pid, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RedisCluster::Cli(size_t i, const std::vector<std::string>& args,
                                              absl::Duration timeout) const {
  std::vector<std::string> argv = {options_.cli_binary, "-h", "127.0.0.1", "-p",
                                   absl::StrCat(nodes_[i].port)};
  for (std::string& arg : CliTlsArgs()) argv.push_back(std::move(arg));
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> result = RunCommand(argv, "", timeout);
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("redis-cli ", absl::StrJoin(args, " "), " at ",
                                               address(i), " failed (exit ", result->exit_code,
                                               "): ", result->err, result->out));
  }
  return result->out;
}

absl::StatusOr<std::string> RedisCluster::NodeId(size_t i) const {
  absl::StatusOr<std::string> id = Cli(i, {"CLUSTER", "MYID"});
  if (!id.ok()) return id.status();
  const std::string trimmed(absl::StripAsciiWhitespace(*id));
  if (trimmed.size() != 40) {
    return absl::UnavailableError(absl::StrCat("CLUSTER MYID at ", address(i), ": ", trimmed));
  }
  return trimmed;
}

absl::StatusOr<size_t> RedisCluster::SlotOwner(int slot) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!running(i)) continue;
    absl::StatusOr<std::string> nodes = Cli(i, {"CLUSTER", "NODES"});
    if (!nodes.ok()) continue;
    // <id> <host:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
    for (absl::string_view line : absl::StrSplit(*nodes, '\n', absl::SkipEmpty())) {
      const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() < 9 || !absl::StrContains(fields[2], "master")) continue;
      for (size_t f = 8; f < fields.size(); ++f) {
        if (absl::StartsWith(fields[f], "[")) continue;  // a migration in progress
        const std::vector<absl::string_view> range = absl::StrSplit(fields[f], '-');
        int first = 0, last = 0;
        if (!absl::SimpleAtoi(range[0], &first)) continue;
        if (range.size() < 2 || !absl::SimpleAtoi(range[1], &last)) last = first;
        if (slot < first || slot > last) continue;
        const absl::string_view host_port = fields[1].substr(0, fields[1].find('@'));
        for (size_t n = 0; n < nodes_.size(); ++n) {
          if (address(n) == host_port) return n;
        }
      }
    }
    return absl::NotFoundError(absl::StrCat("no master serves slot ", slot, " at ", address(i)));
  }
  return absl::NotFoundError("no running node answered CLUSTER NODES");
}

namespace {

// ExpectReply: `out` (redis-cli's output) is `want` ("OK"); else Unavailable.
absl::Status ExpectReply(const absl::StatusOr<std::string>& out, absl::string_view want,
                         absl::string_view what) {
  if (!out.ok()) return out.status();
  if (absl::StripAsciiWhitespace(*out) != want) {
    return absl::UnavailableError(absl::StrCat(what, ": ", *out));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RedisCluster::BeginSlotMigration(int slot, size_t from, size_t to) const {
  absl::StatusOr<std::string> from_id = NodeId(from);
  if (!from_id.ok()) return from_id.status();
  absl::StatusOr<std::string> to_id = NodeId(to);
  if (!to_id.ok()) return to_id.status();
  const std::string s = absl::StrCat(slot);
  if (absl::Status st = ExpectReply(Cli(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", *from_id}), "OK",
                                    "SETSLOT IMPORTING");
      !st.ok()) {
    return st;
  }
  return ExpectReply(Cli(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", *to_id}), "OK",
                     "SETSLOT MIGRATING");
}

absl::Status RedisCluster::MigrateKey(size_t from, size_t to, const std::string& key) const {
  return ExpectReply(Cli(from, {"MIGRATE", "127.0.0.1", absl::StrCat(port(to)), key, "0", "5000"}),
                     "OK", absl::StrCat("MIGRATE ", key));
}

absl::Status RedisCluster::FinishSlotMigration(int slot, size_t from, size_t to) const {
  const std::string s = absl::StrCat(slot);
  for (;;) {
    absl::StatusOr<std::string> keys = Cli(from, {"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (!keys.ok()) return keys.status();
    const std::vector<std::string> names = absl::StrSplit(*keys, '\n', absl::SkipWhitespace());
    if (names.empty()) break;
    for (const std::string& key : names) {
      if (absl::Status st = MigrateKey(from, to, key); !st.ok()) return st;
    }
  }
  absl::StatusOr<std::string> to_id = NodeId(to);
  if (!to_id.ok()) return to_id.status();
  // The destination first, then the source (the specification's order),
  // then the other masters; gossip carries it to the replicas.
  std::vector<size_t> order = {to, from};
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (i != to && i != from && running(i) && started_as_master(i)) order.push_back(i);
  }
  for (size_t i : order) {
    if (absl::Status st = ExpectReply(Cli(i, {"CLUSTER", "SETSLOT", s, "NODE", *to_id}), "OK",
                                      absl::StrCat("SETSLOT NODE at ", address(i)));
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::MigrateSlot(int slot, size_t from, size_t to) const {
  if (absl::Status st = BeginSlotMigration(slot, from, to); !st.ok()) return st;
  return FinishSlotMigration(slot, from, to);
}

std::string RedisCluster::LogTail(size_t i, size_t max_bytes) const {
  std::ifstream in(nodes_[i].dir + "/redis.log");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string log = buf.str();
  return log.size() <= max_bytes ? log : log.substr(log.size() - max_bytes);
}

RedisCluster* SharedCluster(const RedisCluster::Options& options) {
  static absl::Mutex mu(absl::kConstInit);
  static RedisCluster* cluster = nullptr;
  static absl::Status start_error;
  absl::MutexLock lock(&mu);
  if (cluster == nullptr && start_error.ok()) {
    absl::StatusOr<std::unique_ptr<RedisCluster>> started = RedisCluster::Start(options);
    if (started.ok()) {
      cluster = started->release();  // lives until the process exits
    } else {
      start_error = started.status();
    }
  }
  if (!start_error.ok()) ADD_FAILURE() << "starting the shared Redis cluster: " << start_error;
  return cluster;
}

RedisCluster* SharedTlsCluster() {
  RedisCluster::Options options;
  options.tls = true;
  options.tls_auth_clients = true;
  return SharedCluster(options);
}

}  // namespace dedupd::testing

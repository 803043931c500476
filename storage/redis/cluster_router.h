// cluster_router.h: runs commands on a Redis Cluster (Redis, Valkey,
// Kvrocks) for the Redis Cluster store backend (docs/design.md, "Scaling
// past one machine"). hiredis 0.14 speaks to one node; this router adds the
// cluster: it reads the slot map (CLUSTER SLOTS) from a seed, keeps one
// connection per node, splits a batch of commands by owning node and
// pipelines each node's share, follows MOVED (refreshing the map) and ASK
// (ASKING, without touching the map), retries TRYAGAIN and CLUSTERDOWN with
// bounded jittered backoff, and answers per item: a node that cannot be
// reached fails only its own items. Callers never see hiredis: replies are
// owned `Value`s.
//
// Example:
//   RouterOptions options;
//   options.seeds = {"10.0.0.5:6379", "10.0.0.6:6379"};
//   absl::StatusOr<std::unique_ptr<ClusterRouter>> router = ClusterRouter::Connect(options);
//   if (!router.ok()) return router.status();
//   std::vector<absl::StatusOr<Value>> replies = (*router)->Execute({
//       Command::ForKey("u:1", {"SET", "u:1", "claimed", "NX"}),
//       Command::ForKey("u:2", {"GET", "u:2"}),
//   });
//   // replies[0]: Value::Status("OK") or Value::Nil() (already claimed);
//   // replies[1]: an Unavailable status if u:2's node is down.
//
//   static const Script kClaim("return redis.call('SET', KEYS[1], ARGV[1], 'NX')");
//   absl::StatusOr<Value> r = (*router)->Eval(kClaim, {"{h}:owner"}, {"w1"});
//
// TLS: set RouterOptions::tls (redis_connection.h). hiredis 0.14 has no
// TLS (hiredis_ssl came with hiredis 1.0), so a TLS connection is our own
// OpenSSL code feeding hiredis's RESP parser; plaintext is hiredis's.
//
// Thread safety: ClusterRouter is thread-safe. Each node's connection is
// guarded by its own mutex, so concurrent callers serialize per node; one
// Execute() visits the nodes of its batch one after another. Value,
// Command, Script and the free functions are plain values / pure functions.
#ifndef DEDUPD_STORAGE_REDIS_CLUSTER_ROUTER_H_
#define DEDUPD_STORAGE_REDIS_CLUSTER_ROUTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/redis/cluster_slots.h"
#include "storage/redis/redis_connection.h"

// hiredis's types; only storage/redis/*.cc include hiredis.
struct redisReply;

namespace dedupd::redis {

// Value: one reply, owned (a deep copy of hiredis's redisReply).
struct Value {
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };

  Type type = Type::kNil;
  long long integer = 0;        // kInteger
  std::string str;              // kString, kStatus, kError (the message)
  std::vector<Value> elements;  // kArray

  static Value Nil() { return Value(); }
  static Value Integer(long long v);
  static Value String(std::string s);
  static Value Status(std::string s);
  static Value Error(std::string s);
  static Value Array(std::vector<Value> elements);

  bool is_error() const { return type == Type::kError; }
  // ErrorCode returns the first word of an error reply ("NOSCRIPT",
  // "WRONGTYPE", "ERR", "MOVED"), or "" when this is not an error.
  absl::string_view ErrorCode() const;

  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }
  // Prints e.g. `"OK"`, `(error) ERR x`, `(integer) 3`, `(nil)`, `[a, b]`.
  friend std::ostream& operator<<(std::ostream& os, const Value& v);
};

// ValueFromReply deep-copies a hiredis reply. Unknown reply types (none in
// RESP2) become an error Value.
Value ValueFromReply(const redisReply& reply);

// Command: one command and where it must run.
struct Command {
  // e.g. {"SET", "k", "v"}; Execute answers an empty one InvalidArgument.
  std::vector<std::string> argv;
  // Routing: the slot of `key`, unless `slot` >= 0 is given explicitly
  // (Execute answers a slot outside -1..16383 InvalidArgument).
  std::string key;
  int slot = -1;

  static Command ForKey(std::string key, std::vector<std::string> argv);
  static Command ForSlot(int slot, std::vector<std::string> argv);
  // RoutingSlot: the slot this command runs on.
  int RoutingSlot() const;
};

// RouterOptions: how the router connects and how hard it tries.
struct RouterOptions {
  // Nodes to read the slot map from at Connect, "host:port" (IPv4 or a
  // host name; IPv6 literals are not supported). Any one reachable node is
  // enough. REQUIRES: non-empty.
  std::vector<std::string> seeds;
  // Sent as AUTH after every connect when non-empty: `AUTH password`, or
  // `AUTH user password` (Redis 6 ACLs) when `user` is set too.
  // Default: empty (no AUTH).
  std::string user;
  std::string password;
  // TLS to every node (TlsOptions, redis_connection.h): the nodes'
  // certificates are verified against tls.ca_pem for each node's host (or
  // tls.server_name); a client certificate is sent when set. With TLS off
  // the other tls fields must be empty. Default: off (plaintext).
  TlsOptions tls;
  // Bound on one TCP connect, and with TLS on each read or write of the
  // handshake and of the PING after it. Default: 1 s.
  absl::Duration connect_timeout = absl::Seconds(1);
  // Bound on each socket read or write of a command's pipeline
  // (SO_RCVTIMEO/SO_SNDTIMEO). Default: 2 s.
  absl::Duration command_timeout = absl::Seconds(2);
  // How many times one item may be sent (first send, MOVED/ASK redirects,
  // TRYAGAIN/CLUSTERDOWN retries). Default: 5 (the Redis client convention).
  int max_attempts = 5;
  // Backoff before retrying TRYAGAIN/CLUSTERDOWN: retry r (0-based) waits a
  // uniformly random time in [d/2, d], d = min(cap, base * 2^r).
  // Default: base 20 ms, cap 500 ms.
  absl::Duration retry_backoff_base = absl::Milliseconds(20);
  absl::Duration retry_backoff_cap = absl::Milliseconds(500);
  // Bound on one Execute()/Eval() call's rounds, including backoff; items
  // still unanswered then fail Unavailable. Default: 5 s.
  absl::Duration deadline = absl::Seconds(5);
  // The slot map is read again when it is older than this (checked at each
  // Execute), besides on MOVED and on a node that cannot be reached.
  // Default: 60 s.
  absl::Duration refresh_interval = absl::Seconds(60);
};

// NodeStats: one node's counters since the router started.
struct NodeStats {
  std::string node;            // "host:port"
  uint64_t commands_sent = 0;  // commands written to the node (ASKING included)
  uint64_t errors = 0;         // failed connects and broken connections
  uint64_t redirects = 0;      // MOVED and ASK replies from the node
  uint64_t retries = 0;        // TRYAGAIN and CLUSTERDOWN replies from the node
  uint64_t reconnects = 0;     // connections opened after the first one
  bool connected = false;      // a connection is open now
};

// Script: a Lua script and its SHA-1, for EVALSHA.
class Script {
 public:
  explicit Script(std::string source);
  const std::string& source() const { return source_; }
  const std::string& sha1() const { return sha1_; }  // 40 lowercase hex digits

 private:
  std::string source_;
  std::string sha1_;
};

// ScriptCall: the KEYS and ARGV of one script run.
struct ScriptCall {
  std::vector<std::string> keys;
  std::vector<std::string> args;
};

// ScriptSlot returns the slot all of `keys` share, or 0 when `keys` is
// empty (a script without keys may run anywhere). InvalidArgument when the
// keys map to different slots (give them one hash tag: "{h}:a", "{h}:b").
absl::StatusOr<int> ScriptSlot(const std::vector<std::string>& keys);

// RedirectKind / Redirect: what a cluster error reply asks the client to do.
enum class RedirectKind { kNone, kMoved, kAsk, kTryAgain, kClusterDown };
struct Redirect {
  RedirectKind kind = RedirectKind::kNone;
  int slot = -1;     // kMoved, kAsk
  std::string node;  // kMoved, kAsk: "host:port"
};

// ParseRedirect classifies `reply`: "MOVED <slot> <host>:<port>", "ASK
// <slot> <host>:<port>", "TRYAGAIN ...", "CLUSTERDOWN ..."; anything else
// (including non-errors and malformed MOVED/ASK) is kNone. An empty host
// ("MOVED 3999 :6380", Redis 7's unknown endpoint) means `asked_host`, the
// host that sent the reply.
Redirect ParseRedirect(const Value& reply, absl::string_view asked_host);

// BackoffDelay returns the wait before retry `retry` (0-based): `unit` in
// [0, 1) scales it within [d/2, d], d = min(cap, base * 2^retry).
absl::Duration BackoffDelay(int retry, absl::Duration base, absl::Duration cap, double unit);

// GroupByNode returns, for each node that owns a slot of `slots`, the
// indexes of `slots` it owns, ascending; `unowned` receives the indexes
// whose slot has no owner in `map`.
std::map<std::string, std::vector<size_t>> GroupByNode(const SlotMap& map,
                                                       const std::vector<int>& slots,
                                                       std::vector<size_t>* unowned);

class ClusterRouter {
 public:
  // Connect reads the slot map from the first seed that answers CLUSTER
  // SLOTS (seeds tried in order). The map may be incomplete (see
  // SlotMapComplete). Errors: InvalidArgument for bad options (no seeds, a
  // seed not "host:port", TLS settings that do not parse or without
  // tls.enabled); FailedPrecondition when a node refuses AUTH, is not in
  // cluster mode, fails TLS verification ("redis node 127.0.0.1:7001: TLS:
  // the server's certificate did not verify for 127.0.0.1: ...") or
  // refuses our TLS client (no or a bad client certificate); Unavailable
  // when no seed answers (the message names each seed and why).
  static absl::StatusOr<std::unique_ptr<ClusterRouter>> Connect(RouterOptions options);

  ~ClusterRouter();
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  // Execute runs `commands` and returns one answer per command, in order.
  // An answer is the node's reply, including Redis error replies other
  // than redirects (NOSCRIPT, WRONGTYPE, ERR ...: handle them as data), or
  // a status:
  //   Unavailable — the owning node cannot be reached or its connection
  //     broke ("redis node 127.0.0.1:7001: connection refused"; a command
  //     whose connection broke after it was sent may or may not have run),
  //     its slot has no owner, or redirects/TRYAGAIN/CLUSTERDOWN outlasted
  //     max_attempts or the deadline;
  //   FailedPrecondition — the owning node refused AUTH, or TLS (its
  //     certificate did not verify, or it refused our client certificate):
  //     a configuration to fix, not retried;
  //   InvalidArgument — an empty argv or a slot outside 0..16383.
  // Commands of one node are pipelined in order; commands of different
  // nodes have no order between them. Redirected and retried commands are
  // sent again, after the others: do not rely on order within a batch for
  // keys that may be migrating. Time: no new round starts after
  // options.deadline, but the round under way finishes: up to one
  // connect_timeout + command_timeout per node it visits, plus a map
  // refresh (one connect_timeout per node that does not answer).
  std::vector<absl::StatusOr<Value>> Execute(std::vector<Command> commands);

  // ExecuteOne runs one command (Execute with a batch of one).
  absl::StatusOr<Value> ExecuteOne(Command command);

  // EvalBatch runs `script` once per call: EVALSHA, and EVAL for the calls
  // whose node answered NOSCRIPT (EVAL also caches the script there).
  // Answers as Execute; InvalidArgument for a call whose keys map to
  // different slots (ScriptSlot), without running it.
  std::vector<absl::StatusOr<Value>> EvalBatch(const Script& script,
                                               const std::vector<ScriptCall>& calls);
  absl::StatusOr<Value> Eval(const Script& script, std::vector<std::string> keys,
                             std::vector<std::string> args);

  // RefreshSlotMap reads CLUSTER SLOTS again, from the known masters, then
  // the seeds, taking the first complete map (else the most complete one).
  // Unavailable when no node answered; the old map is kept then.
  absl::Status RefreshSlotMap();

  // SlotMapComplete: the current map has an owner for every slot (for a
  // readiness probe).
  bool SlotMapComplete() const;
  // SlotOwner returns the master the current map names for `slot`
  // ("host:port"), or "" when none. REQUIRES: 0 <= slot < kSlotCount.
  std::string SlotOwner(int slot) const;
  // Stats returns a snapshot of every node's counters, sorted by node.
  std::vector<NodeStats> Stats() const;

  // Masters returns the masters of the current slot map ("host:port"),
  // sorted, each once: the nodes to visit for a command about a whole
  // node's keyspace (SCAN, DBSIZE). A master with no slot is not listed.
  std::vector<std::string> Masters() const;

  // ExecuteOnNode runs one command on `node` ("host:port", e.g. from
  // Masters()) as it is: not routed by slot and no redirect followed (a
  // MOVED or ASK reply is the answer), for commands about the node rather
  // than a key (SCAN, DBSIZE, INFO). Error replies are answers, as in
  // Execute. Errors: InvalidArgument for an empty argv or a node that is
  // not host:port; Unavailable when the node cannot be reached or its
  // connection broke (the command may or may not have run); FailedPrecondition
  // when the node refuses AUTH. Time: up to one connect_timeout plus one
  // command_timeout.
  absl::StatusOr<Value> ExecuteOnNode(const std::string& node, std::vector<std::string> argv);

 private:
  struct Node;
  struct Item;

  ClusterRouter(RouterOptions options, std::shared_ptr<const TlsClientContext> tls);
  std::shared_ptr<Node> GetNode(const std::string& host_port);
  std::shared_ptr<const SlotMap> CurrentMap(uint64_t* generation) const;
  // RefreshIfUnchanged refreshes unless another caller already did since
  // `generation` was read.
  void RefreshIfUnchanged(uint64_t generation);
  absl::StatusOr<SlotMap> FetchSlotMap(Node& node);
  // RunOnNode pipelines `items` (indexes into `work`) on `node`; false when
  // the node could not be reached or its connection broke.
  bool RunOnNode(Node& node, std::vector<Item>& work, const std::vector<size_t>& items);

  const RouterOptions options_;
  const std::shared_ptr<const TlsClientContext> tls_;  // null: plaintext
  absl::Mutex refresh_mu_;  // one refresh at a time; taken before any Node::mu
  mutable absl::Mutex mu_;  // never held while talking to a node
  std::shared_ptr<const SlotMap> map_ ABSL_GUARDED_BY(mu_);
  uint64_t map_generation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time map_time_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);
  absl::BitGen rng_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_CLUSTER_ROUTER_H_

#include "storage/redis/cluster_router.h"

#include <hiredis/hiredis.h>
#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dedupd::redis {
namespace {

// SplitHostPort parses "host:port" (the last ':' separates them, as MOVED
// writes it). False when the port is not in 1..65535.
bool SplitHostPort(absl::string_view host_port, std::string* host, int* port) {
  const size_t colon = host_port.rfind(':');
  if (colon == absl::string_view::npos) return false;
  if (!absl::SimpleAtoi(host_port.substr(colon + 1), port) || *port < 1 || *port > 65535) {
    return false;
  }
  *host = std::string(host_port.substr(0, colon));
  return true;
}

// NodeError: the one shape of a per-node failure, so that every caller can
// tell which node failed ("redis node 127.0.0.1:7001: CLUSTERDOWN ...").
absl::Status NodeError(absl::string_view node, absl::string_view what) {
  return absl::UnavailableError(absl::StrCat("redis node ", node, ": ", what));
}

// TransportError: a connection's failure as the node's ("connection
// refused" -> "redis node 127.0.0.1:7001: connection refused"), keeping
// its code (FailedPrecondition for a TLS refusal: retrying will not help).
absl::Status TransportError(absl::string_view node, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("redis node ", node, ": ", s.message()));
}

}  // namespace

// ---------------------------------------------------------------- Value

Value Value::Integer(long long v) {
  Value out;
  out.type = Type::kInteger;
  out.integer = v;
  return out;
}
Value Value::String(std::string s) {
  Value out;
  out.type = Type::kString;
  out.str = std::move(s);
  return out;
}
Value Value::Status(std::string s) {
  Value out = String(std::move(s));
  out.type = Type::kStatus;
  return out;
}
Value Value::Error(std::string s) {
  Value out = String(std::move(s));
  out.type = Type::kError;
  return out;
}
Value Value::Array(std::vector<Value> elements) {
  Value out;
  out.type = Type::kArray;
  out.elements = std::move(elements);
  return out;
}

absl::string_view Value::ErrorCode() const {
  if (type != Type::kError) return "";
  const absl::string_view s = str;
  return s.substr(0, s.find(' '));
}

bool operator==(const Value& a, const Value& b) {
  return a.type == b.type && a.integer == b.integer && a.str == b.str && a.elements == b.elements;
}

std::ostream& operator<<(std::ostream& os, const Value& v) {
  switch (v.type) {
    case Value::Type::kNil:
      return os << "(nil)";
    case Value::Type::kInteger:
      return os << "(integer) " << v.integer;
    case Value::Type::kString:
      return os << '"' << v.str << '"';
    case Value::Type::kStatus:
      return os << v.str;
    case Value::Type::kError:
      return os << "(error) " << v.str;
    case Value::Type::kArray:
      os << '[';
      for (size_t i = 0; i < v.elements.size(); ++i) os << (i ? ", " : "") << v.elements[i];
      return os << ']';
  }
  return os;
}

Value ValueFromReply(const redisReply& reply) {
  const auto text = [&reply] { return std::string(reply.str, reply.len); };
  switch (reply.type) {
    case REDIS_REPLY_NIL:
      return Value::Nil();
    case REDIS_REPLY_INTEGER:
      return Value::Integer(reply.integer);
    case REDIS_REPLY_STRING:
      return Value::String(text());
    case REDIS_REPLY_STATUS:
      return Value::Status(text());
    case REDIS_REPLY_ERROR:
      return Value::Error(text());
    case REDIS_REPLY_ARRAY: {
      std::vector<Value> elements;
      elements.reserve(reply.elements);
      for (size_t i = 0; i < reply.elements; ++i) {
        elements.push_back(ValueFromReply(*reply.element[i]));
      }
      return Value::Array(std::move(elements));
    }
  }
  return Value::Error(absl::StrCat("ERR unknown hiredis reply type ", reply.type));
}

// ---------------------------------------------------------------- Command, Script

Command Command::ForKey(std::string key, std::vector<std::string> argv) {
  Command c;
  c.key = std::move(key);
  c.argv = std::move(argv);
  return c;
}

Command Command::ForSlot(int slot, std::vector<std::string> argv) {
  Command c;
  c.slot = slot;
  c.argv = std::move(argv);
  return c;
}

int Command::RoutingSlot() const { return slot >= 0 ? slot : KeySlot(key); }

Script::Script(std::string source) : source_(std::move(source)) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(source_.data()), source_.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char b : digest) {
    sha1_.push_back(kHex[b >> 4]);
    sha1_.push_back(kHex[b & 0xf]);
  }
}

absl::StatusOr<int> ScriptSlot(const std::vector<std::string>& keys) {
  if (keys.empty()) return 0;
  const int slot = KeySlot(keys[0]);
  for (size_t i = 1; i < keys.size(); ++i) {
    if (KeySlot(keys[i]) != slot) {
      return absl::InvalidArgumentError(absl::StrCat(
          "script keys in different cluster slots: ", keys[0], " (slot ", slot, ") and ", keys[i],
          " (slot ", KeySlot(keys[i]), "); give them one hash tag, e.g. {h}:a and {h}:b"));
    }
  }
  return slot;
}

// ---------------------------------------------------------------- pure routing helpers

Redirect ParseRedirect(const Value& reply, absl::string_view asked_host) {
  Redirect r;
  const absl::string_view code = reply.ErrorCode();
  if (code == "TRYAGAIN") {
    r.kind = RedirectKind::kTryAgain;
    return r;
  }
  if (code == "CLUSTERDOWN") {
    r.kind = RedirectKind::kClusterDown;
    return r;
  }
  if (code != "MOVED" && code != "ASK") return r;
  const std::vector<absl::string_view> words = absl::StrSplit(reply.str, ' ');
  std::string host;
  int port = 0;
  if (words.size() != 3 || !absl::SimpleAtoi(words[1], &r.slot) || r.slot < 0 ||
      r.slot >= kSlotCount || !SplitHostPort(words[2], &host, &port)) {
    r.slot = -1;
    return r;  // malformed: the caller sees the error reply itself
  }
  if (host.empty()) host = std::string(asked_host);
  r.kind = code == "MOVED" ? RedirectKind::kMoved : RedirectKind::kAsk;
  r.node = absl::StrCat(host, ":", port);
  return r;
}

absl::Duration BackoffDelay(int retry, absl::Duration base, absl::Duration cap, double unit) {
  absl::Duration d = base;
  for (int i = 0; i < retry && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  unit = std::clamp(unit, 0.0, 1.0);
  return d / 2 + (d / 2) * unit;
}

std::map<std::string, std::vector<size_t>> GroupByNode(const SlotMap& map,
                                                       const std::vector<int>& slots,
                                                       std::vector<size_t>* unowned) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotRange* owner = map.Owner(slots[i]);
    if (owner == nullptr) {
      unowned->push_back(i);
      continue;
    }
    groups[owner->master.HostPort()].push_back(i);
  }
  return groups;
}

// ---------------------------------------------------------------- ClusterRouter

struct ClusterRouter::Node {
  Node(std::string host_port, std::string host_in, int port_in)
      : name(std::move(host_port)), host(std::move(host_in)), port(port_in) {}

  const std::string name;  // "host:port"
  const std::string host;
  const int port;

  absl::Mutex mu;  // serializes use of the connection
  // Plaintext (hiredis) or TLS; null when closed. Commands appended are
  // sent by the first GetReply after them: a pipeline.
  std::unique_ptr<RedisConnection> conn ABSL_GUARDED_BY(mu);
  bool ever_connected ABSL_GUARDED_BY(mu) = false;

  std::atomic<uint64_t> commands_sent{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> redirects{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<bool> connected{false};

  void Close() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    conn.reset();
    connected = false;
  }

  // Broken records a connection that failed mid-use (`why`, from
  // GetReply) and drops it; the next use reconnects.
  absl::Status Broken(const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    absl::Status s = TransportError(name, why);
    ++errors;
    Close();
    return s;
  }

  // EnsureConnected opens the connection (and AUTHs) unless it is open.
  absl::Status EnsureConnected(const RouterOptions& options,
                               const std::shared_ptr<const TlsClientContext>& tls)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (conn != nullptr) return absl::OkStatus();
    ConnectOptions connect;
    connect.host = host;
    connect.port = port;
    connect.connect_timeout = options.connect_timeout;
    connect.io_timeout = options.command_timeout;
    connect.tls = tls;
    absl::StatusOr<std::unique_ptr<RedisConnection>> opened = ConnectRedis(connect);
    if (!opened.ok()) {
      ++errors;
      return TransportError(name, opened.status());
    }
    conn = *std::move(opened);
    if (ever_connected) ++reconnects;
    ever_connected = true;
    if (!options.password.empty()) {
      std::vector<std::string> auth = {"AUTH"};
      if (!options.user.empty()) auth.push_back(options.user);
      auth.push_back(options.password);
      conn->Append(auth);
      ++commands_sent;
      absl::StatusOr<ReplyPtr> reply = conn->GetReply();
      if (!reply.ok()) return Broken(reply.status());
      if ((*reply)->type == REDIS_REPLY_ERROR) {
        ++errors;
        Close();
        return absl::FailedPreconditionError(absl::StrCat(
            "redis node ", name, ": AUTH refused: ", std::string((*reply)->str, (*reply)->len)));
      }
    }
    connected = true;
    return absl::OkStatus();
  }
};

// Item: one command of an Execute call, as it moves between rounds.
struct ClusterRouter::Item {
  const Command* command = nullptr;
  int slot = 0;
  std::string target;  // "" = the map's owner; else the node MOVED/ASK named
  bool asking = false;
  int attempts = 0;
  std::optional<absl::StatusOr<Value>> result;
  // The outcome of the last round when it did not set `result`.
  enum class Next { kSend, kBackoff, kUnreachable } next = Next::kSend;
  std::string tried;        // the node of the last round
  absl::Status last_error;  // why the item is not answered yet
};

ClusterRouter::ClusterRouter(RouterOptions options, std::shared_ptr<const TlsClientContext> tls)
    : options_(std::move(options)), tls_(std::move(tls)), map_(std::make_shared<SlotMap>()) {}

ClusterRouter::~ClusterRouter() = default;

absl::StatusOr<std::unique_ptr<ClusterRouter>> ClusterRouter::Connect(RouterOptions options) {
  if (options.seeds.empty()) return absl::InvalidArgumentError("redis router: no seed nodes");
  for (const std::string& seed : options.seeds) {
    std::string host;
    int port = 0;
    if (!SplitHostPort(seed, &host, &port) || host.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis router: seed \"", seed, "\" is not host:port"));
    }
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError("redis router: max_attempts must be at least 1");
  }
  std::shared_ptr<const TlsClientContext> tls;
  if (options.tls.enabled) {
    absl::StatusOr<std::shared_ptr<const TlsClientContext>> created =
        TlsClientContext::Create(options.tls);
    if (!created.ok()) return created.status();
    tls = *std::move(created);
  } else if (!options.tls.ca_pem.empty() || !options.tls.cert_pem.empty() ||
             !options.tls.key_pem.empty() || !options.tls.server_name.empty()) {
    return absl::InvalidArgumentError(
        "redis router: TLS settings (CA, client certificate, server name) without TLS enabled");
  }
  std::unique_ptr<ClusterRouter> router(new ClusterRouter(std::move(options), std::move(tls)));
  absl::Status s = router->RefreshSlotMap();
  if (!s.ok()) return s;
  return router;
}

std::shared_ptr<ClusterRouter::Node> ClusterRouter::GetNode(const std::string& host_port) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Node>& node = nodes_[host_port];
  if (node == nullptr) {
    std::string host;
    int port = 0;
    SplitHostPort(host_port, &host, &port);  // names come from seeds, maps and MOVED: checked
    node = std::make_shared<Node>(host_port, host, port);
  }
  return node;
}

std::shared_ptr<const SlotMap> ClusterRouter::CurrentMap(uint64_t* generation) const {
  absl::MutexLock lock(&mu_);
  if (generation != nullptr) *generation = map_generation_;
  return map_;
}

absl::StatusOr<SlotMap> ClusterRouter::FetchSlotMap(Node& node) {
  absl::MutexLock lock(&node.mu);
  if (absl::Status s = node.EnsureConnected(options_, tls_); !s.ok()) return s;
  node.conn->Append({"CLUSTER", "SLOTS"});
  ++node.commands_sent;
  absl::StatusOr<ReplyPtr> got = node.conn->GetReply();
  if (!got.ok()) return node.Broken(got.status());
  ReplyPtr reply = *std::move(got);
  if (reply->type == REDIS_REPLY_ERROR && absl::StartsWith(reply->str, "NOAUTH")) {
    return absl::FailedPreconditionError(
        absl::StrCat("redis node ", node.name,
                     ": requires AUTH (set a password): ", std::string(reply->str, reply->len)));
  }
  return SlotMap::FromClusterSlots(*reply, node.host);
}

absl::Status ClusterRouter::RefreshSlotMap() {
  absl::MutexLock refresh(&refresh_mu_);
  // Ask the masters we know first (they are the likeliest to be up and
  // current), then the seeds.
  std::vector<std::string> candidates;
  {
    std::shared_ptr<const SlotMap> map = CurrentMap(nullptr);
    for (const SlotRange& r : map->ranges()) candidates.push_back(r.master.HostPort());
  }
  candidates.insert(candidates.end(), options_.seeds.begin(), options_.seeds.end());
  std::vector<std::string> asked;
  std::vector<std::string> failures;
  std::optional<SlotMap> best;
  absl::Status precondition;
  for (const std::string& candidate : candidates) {
    if (std::find(asked.begin(), asked.end(), candidate) != asked.end()) continue;
    asked.push_back(candidate);
    absl::StatusOr<SlotMap> map = FetchSlotMap(*GetNode(candidate));
    if (!map.ok()) {
      if (absl::IsFailedPrecondition(map.status())) precondition = map.status();
      failures.push_back(std::string(map.status().message()));
      continue;
    }
    if (!best.has_value() || map->owned_slots() > best->owned_slots()) best = *std::move(map);
    if (best->complete()) break;
  }
  if (!best.has_value()) {
    if (!precondition.ok()) return precondition;
    return absl::UnavailableError(absl::StrCat("redis router: no node answered CLUSTER SLOTS: ",
                                               absl::StrJoin(failures, "; ")));
  }
  absl::MutexLock lock(&mu_);
  map_ = std::make_shared<const SlotMap>(*std::move(best));
  ++map_generation_;
  map_time_ = absl::Now();
  return absl::OkStatus();
}

void ClusterRouter::RefreshIfUnchanged(uint64_t generation) {
  {
    absl::MutexLock lock(&mu_);
    if (map_generation_ != generation) return;
  }
  // Two callers may both get here for one generation; the second refresh
  // is redundant, not wrong.
  RefreshSlotMap().IgnoreError();  // why: the old map stays; items fail on their own
}

bool ClusterRouter::SlotMapComplete() const { return CurrentMap(nullptr)->complete(); }

std::string ClusterRouter::SlotOwner(int slot) const {
  const SlotRange* owner = CurrentMap(nullptr)->Owner(slot);
  return owner == nullptr ? "" : owner->master.HostPort();
}

std::vector<NodeStats> ClusterRouter::Stats() const {
  std::vector<NodeStats> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, node] : nodes_) {
    NodeStats s;
    s.node = name;
    s.commands_sent = node->commands_sent;
    s.errors = node->errors;
    s.redirects = node->redirects;
    s.retries = node->retries;
    s.reconnects = node->reconnects;
    s.connected = node->connected;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> ClusterRouter::Masters() const {
  std::vector<std::string> out;
  for (const SlotRange& r : CurrentMap(nullptr)->ranges()) out.push_back(r.master.HostPort());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::StatusOr<Value> ClusterRouter::ExecuteOnNode(const std::string& node,
                                                   std::vector<std::string> argv) {
  if (argv.empty()) return absl::InvalidArgumentError("redis command with an empty argv");
  std::string host;
  int port = 0;
  if (!SplitHostPort(node, &host, &port) || host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("redis node \"", node, "\" is not host:port"));
  }
  std::shared_ptr<Node> n = GetNode(node);
  absl::MutexLock lock(&n->mu);
  if (absl::Status s = n->EnsureConnected(options_, tls_); !s.ok()) return s;
  n->conn->Append(argv);
  ++n->commands_sent;
  absl::StatusOr<ReplyPtr> reply = n->conn->GetReply();
  if (!reply.ok()) return n->Broken(reply.status());
  return ValueFromReply(**reply);
}

bool ClusterRouter::RunOnNode(Node& node, std::vector<Item>& work,
                              const std::vector<size_t>& items) {
  absl::MutexLock lock(&node.mu);
  if (absl::Status s = node.EnsureConnected(options_, tls_); !s.ok()) {
    for (size_t i : items) {
      Item& item = work[i];
      item.tried = node.name;
      if (absl::IsUnavailable(s)) {
        // Nothing was sent: after a refresh the slot may have a new owner.
        item.next = Item::Next::kUnreachable;
        item.last_error = s;
      } else {
        item.result = s;
      }
    }
    return false;
  }
  for (size_t i : items) {
    Item& item = work[i];
    if (item.asking) {
      node.conn->Append({"ASKING"});
      ++node.commands_sent;
    }
    node.conn->Append(item.command->argv);
    ++node.commands_sent;
    ++item.attempts;
    item.tried = node.name;
  }
  for (size_t n = 0; n < items.size(); ++n) {
    Item& item = work[items[n]];
    absl::StatusOr<ReplyPtr> reply = ReplyPtr();
    if (item.asking) {
      // ASKING answers +OK; its reply is not the command's.
      reply = node.conn->GetReply();
    }
    if (reply.ok()) reply = node.conn->GetReply();
    if (!reply.ok()) {
      // Sent but unanswered: the command may or may not have run, so it is
      // not resent; this item and the rest of the node's share fail.
      const absl::Status s = node.Broken(reply.status());
      for (size_t m = n; m < items.size(); ++m) work[items[m]].result = s;
      return false;
    }
    Value value = ValueFromReply(**reply);
    const Redirect redirect = ParseRedirect(value, node.host);
    item.asking = false;
    switch (redirect.kind) {
      case RedirectKind::kNone:
        item.result = std::move(value);
        continue;
      case RedirectKind::kMoved:
      case RedirectKind::kAsk:
        ++node.redirects;
        item.target = redirect.node;
        item.asking = redirect.kind == RedirectKind::kAsk;
        item.next = Item::Next::kSend;
        break;
      case RedirectKind::kTryAgain:
      case RedirectKind::kClusterDown:
        ++node.retries;
        item.target.clear();
        item.next = Item::Next::kBackoff;
        break;
    }
    item.last_error = NodeError(node.name, value.str);
    if (item.attempts >= options_.max_attempts) {
      item.result = absl::UnavailableError(
          absl::StrCat(item.last_error.message(), " (gave up after ", item.attempts, " attempts)"));
    }
  }
  return true;
}

std::vector<absl::StatusOr<Value>> ClusterRouter::Execute(std::vector<Command> commands) {
  const absl::Time deadline = absl::Now() + options_.deadline;
  std::vector<Item> work(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    Item& item = work[i];
    item.command = &commands[i];
    if (commands[i].argv.empty()) {
      item.result = absl::InvalidArgumentError("redis command with an empty argv");
    } else if (commands[i].slot >= kSlotCount || commands[i].slot < -1) {
      item.result = absl::InvalidArgumentError(absl::StrCat("redis command ", commands[i].argv[0],
                                                            ": slot ", commands[i].slot,
                                                            " is outside 0..", kSlotCount - 1));
    } else {
      item.slot = commands[i].RoutingSlot();
    }
  }
  {
    bool stale = false;
    uint64_t generation = 0;
    {
      absl::MutexLock lock(&mu_);
      stale = absl::Now() - map_time_ > options_.refresh_interval;
      generation = map_generation_;
    }
    if (stale) RefreshIfUnchanged(generation);
  }

  int backoff_round = 0;
  for (;;) {
    std::vector<size_t> pending;
    for (size_t i = 0; i < work.size(); ++i) {
      if (!work[i].result.has_value()) pending.push_back(i);
    }
    if (pending.empty()) break;
    if (absl::Now() >= deadline) {
      for (size_t i : pending) {
        work[i].result = absl::UnavailableError(
            absl::StrCat(work[i].last_error.message(), " (gave up at the ",
                         absl::FormatDuration(options_.deadline), " deadline)"));
      }
      break;
    }
    uint64_t generation = 0;
    const std::shared_ptr<const SlotMap> map = CurrentMap(&generation);

    // Route: a redirect's node first, else the map's owner.
    std::vector<size_t> by_map;
    std::vector<int> slots;
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t i : pending) {
      if (!work[i].target.empty()) {
        groups[work[i].target].push_back(i);
      } else {
        by_map.push_back(i);
        slots.push_back(work[i].slot);
      }
    }
    std::vector<size_t> unowned;
    for (auto& [node, indexes] : GroupByNode(*map, slots, &unowned)) {
      std::vector<size_t>& group = groups[node];
      for (size_t k : indexes) group.push_back(by_map[k]);
    }
    bool refresh = false;
    for (size_t k : unowned) {
      Item& item = work[by_map[k]];
      ++item.attempts;  // a round spent without a node counts as an attempt
      item.last_error = absl::UnavailableError(
          absl::StrCat("redis slot ", item.slot, " has no owner in the cluster's slot map"));
      item.next = Item::Next::kBackoff;
      refresh = true;
      if (item.attempts >= options_.max_attempts) item.result = item.last_error;
    }
    for (const auto& [name, items] : groups) {
      // A node that failed may have failed over: read the map again.
      if (!RunOnNode(*GetNode(name), work, items)) refresh = true;
    }

    bool backoff = false;
    for (size_t i : pending) {
      const Item& item = work[i];
      if (item.result.has_value()) continue;
      if (item.next == Item::Next::kBackoff) backoff = true;
      // MOVED: the map is stale (ASK is not: the slot still belongs to the
      // node the map names until the migration ends).
      const bool moved = item.next == Item::Next::kSend && !item.target.empty() && !item.asking;
      if (item.next == Item::Next::kUnreachable || moved) refresh = true;
    }
    if (refresh) RefreshIfUnchanged(generation);

    // An unreachable node fails its items unless the fresh map moved their
    // slot elsewhere (a failover the old map did not know yet).
    const std::shared_ptr<const SlotMap> fresh = CurrentMap(nullptr);
    for (size_t i : pending) {
      Item& item = work[i];
      if (item.result.has_value() || item.next != Item::Next::kUnreachable) continue;
      const SlotRange* owner = fresh->Owner(item.slot);
      ++item.attempts;
      if (item.target.empty() && owner != nullptr && owner->master.HostPort() != item.tried &&
          item.attempts < options_.max_attempts) {
        item.next = Item::Next::kSend;
      } else {
        item.result = item.last_error;
      }
    }
    if (backoff) {
      double unit = 0;
      {
        absl::MutexLock lock(&mu_);
        unit = absl::Uniform(rng_, 0.0, 1.0);
      }
      const absl::Duration wait = BackoffDelay(backoff_round++, options_.retry_backoff_base,
                                               options_.retry_backoff_cap, unit);
      absl::SleepFor(std::min(wait, std::max(deadline - absl::Now(), absl::ZeroDuration())));
    }
  }

  std::vector<absl::StatusOr<Value>> out;
  out.reserve(work.size());
  for (Item& item : work) out.push_back(*std::move(item.result));
  return out;
}

absl::StatusOr<Value> ClusterRouter::ExecuteOne(Command command) {
  std::vector<Command> batch;
  batch.push_back(std::move(command));
  return std::move(Execute(std::move(batch))[0]);
}

std::vector<absl::StatusOr<Value>> ClusterRouter::EvalBatch(const Script& script,
                                                            const std::vector<ScriptCall>& calls) {
  std::vector<absl::StatusOr<Value>> out(calls.size(), absl::UnknownError("not run"));
  // argv after the script: numkeys, keys, args (EVAL and EVALSHA share it).
  const auto tail = [](const ScriptCall& call) {
    std::vector<std::string> argv = {absl::StrCat(call.keys.size())};
    argv.insert(argv.end(), call.keys.begin(), call.keys.end());
    argv.insert(argv.end(), call.args.begin(), call.args.end());
    return argv;
  };
  std::vector<Command> batch;
  std::vector<size_t> origin;
  for (size_t i = 0; i < calls.size(); ++i) {
    absl::StatusOr<int> slot = ScriptSlot(calls[i].keys);
    if (!slot.ok()) {
      out[i] = slot.status();
      continue;
    }
    std::vector<std::string> argv = {"EVALSHA", script.sha1()};
    for (std::string& a : tail(calls[i])) argv.push_back(std::move(a));
    batch.push_back(Command::ForSlot(*slot, std::move(argv)));
    origin.push_back(i);
  }
  std::vector<absl::StatusOr<Value>> replies = Execute(batch);
  // NOSCRIPT: that node has not cached the script (a new node, a restart,
  // SCRIPT FLUSH); EVAL runs it and caches it there.
  std::vector<Command> again;
  std::vector<size_t> again_origin;
  for (size_t k = 0; k < replies.size(); ++k) {
    if (replies[k].ok() && replies[k]->ErrorCode() == "NOSCRIPT") {
      std::vector<std::string> argv = {"EVAL", script.source()};
      for (std::string& a : tail(calls[origin[k]])) argv.push_back(std::move(a));
      again.push_back(Command::ForSlot(batch[k].slot, std::move(argv)));
      again_origin.push_back(origin[k]);
    } else {
      out[origin[k]] = std::move(replies[k]);
    }
  }
  if (!again.empty()) {
    std::vector<absl::StatusOr<Value>> evals = Execute(std::move(again));
    for (size_t k = 0; k < evals.size(); ++k) out[again_origin[k]] = std::move(evals[k]);
  }
  return out;
}

absl::StatusOr<Value> ClusterRouter::Eval(const Script& script, std::vector<std::string> keys,
                                          std::vector<std::string> args) {
  return std::move(EvalBatch(script, {ScriptCall{std::move(keys), std::move(args)}})[0]);
}

}  // namespace dedupd::redis

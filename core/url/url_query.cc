// url_query.cc: step 7 of the URL normalizer; see url_query.h.
//
// Keys are classified on their fully decoded form, which normalization does
// not change, and sorted on their normalized form, so that a second pass
// keeps and orders exactly what the first did.
#include "core/url/url_query.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "absl/strings/ascii.h"
#include "core/url/url_escapes.h"
#include "core/url/url_normalizer.h"

namespace dedupd {
namespace url_internal {

namespace {

// EqualsLower compares `s` case-insensitively with `lower`, which is
// ASCII lowercase.
inline bool EqualsLower(absl::string_view s, absl::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(s[i])) != lower[i]) {
      return false;
    }
  }
  return true;
}
inline bool StartsWithLower(absl::string_view s, absl::string_view lower) {
  return s.size() >= lower.size() && EqualsLower(s.substr(0, lower.size()), lower);
}

enum class ParamVerdict { kKeep, kTracking, kSession, kPolicy, kNotAllowed };

// The built-in tracking and session-id lists. kBuiltinNames is ordered by
// length so that a lookup compares only names of the key's length.
struct BuiltinName {
  absl::string_view name;
  ParamVerdict verdict;
};
constexpr BuiltinName kBuiltinPrefixes[] = {
    {"utm_", ParamVerdict::kTracking},        {"pk_", ParamVerdict::kTracking},
    {"hsa_", ParamVerdict::kTracking},        {"mtm_", ParamVerdict::kTracking},
    {"aspsessionid", ParamVerdict::kSession},
};
constexpr BuiltinName kBuiltinNames[] = {
    {"_ga", ParamVerdict::kTracking},         {"_gl", ParamVerdict::kTracking},
    {"sid", ParamVerdict::kSession},          {"cfid", ParamVerdict::kSession},
    {"gclid", ParamVerdict::kTracking},       {"dclid", ParamVerdict::kTracking},
    {"yclid", ParamVerdict::kTracking},       {"_hsmi", ParamVerdict::kTracking},
    {"s_cid", ParamVerdict::kTracking},       {"gclsrc", ParamVerdict::kTracking},
    {"gbraid", ParamVerdict::kTracking},      {"wbraid", ParamVerdict::kTracking},
    {"fbclid", ParamVerdict::kTracking},      {"mc_cid", ParamVerdict::kTracking},
    {"mc_eid", ParamVerdict::kTracking},      {"igshid", ParamVerdict::kTracking},
    {"twclid", ParamVerdict::kTracking},      {"ttclid", ParamVerdict::kTracking},
    {"_hsenc", ParamVerdict::kTracking},      {"msclkid", ParamVerdict::kTracking},
    {"mkt_tok", ParamVerdict::kTracking},     {"vero_id", ParamVerdict::kTracking},
    {"srsltid", ParamVerdict::kTracking},     {"cftoken", ParamVerdict::kSession},
    {"wickedid", ParamVerdict::kTracking},    {"li_fat_id", ParamVerdict::kTracking},
    {"phpsessid", ParamVerdict::kSession},    {"sessionid", ParamVerdict::kSession},
    {"oly_enc_id", ParamVerdict::kTracking},  {"rb_clickid", ParamVerdict::kTracking},
    {"jsessionid", ParamVerdict::kSession},   {"session_id", ParamVerdict::kSession},
    {"oly_anon_id", ParamVerdict::kTracking},
};
constexpr size_t kNumBuiltinNames = sizeof(kBuiltinNames) / sizeof(kBuiltinNames[0]);
constexpr size_t kMaxBuiltinNameBytes = 11;

constexpr bool BuiltinNamesSortedByLength() {
  for (size_t i = 1; i < kNumBuiltinNames; ++i) {
    if (kBuiltinNames[i - 1].name.size() > kBuiltinNames[i].name.size()) return false;
    if (kBuiltinNames[i].name.size() > kMaxBuiltinNameBytes) return false;
  }
  return true;
}
static_assert(BuiltinNamesSortedByLength(), "keep kBuiltinNames ordered by length");

// kBuiltinNameStart[n]: index of the first name of length >= n.
constexpr std::array<size_t, kMaxBuiltinNameBytes + 2> MakeBuiltinNameStart() {
  std::array<size_t, kMaxBuiltinNameBytes + 2> start{};
  for (size_t n = 0; n < start.size(); ++n) {
    size_t i = 0;
    while (i < kNumBuiltinNames && kBuiltinNames[i].name.size() < n) ++i;
    start[n] = i;
  }
  return start;
}
constexpr auto kBuiltinNameStart = MakeBuiltinNameStart();

// BuiltinVerdict classifies a decoded key against the built-in lists
// (case-insensitive).
ParamVerdict BuiltinVerdict(absl::string_view key) {
  for (const BuiltinName& n : kBuiltinPrefixes) {
    if (StartsWithLower(key, n.name)) return n.verdict;
  }
  if (key.size() > kMaxBuiltinNameBytes) return ParamVerdict::kKeep;
  for (size_t i = kBuiltinNameStart[key.size()]; i < kBuiltinNameStart[key.size() + 1]; ++i) {
    if (EqualsLower(key, kBuiltinNames[i].name)) return kBuiltinNames[i].verdict;
  }
  return ParamVerdict::kKeep;
}

// ClassifyParam decides on a normalized key. Decisions use the fully
// decoded key, which normalization does not change, so a second pass keeps
// exactly what the first kept.
ParamVerdict ClassifyParam(absl::string_view normalized_key, const UrlPolicy& policy,
                           const HostRule* rule, std::string* buf) {
  absl::string_view key = normalized_key;
  if (key.find('%') != absl::string_view::npos) {
    buf->clear();
    FullyDecode(normalized_key, buf);
    key = *buf;
  }
  const ParamVerdict builtin = BuiltinVerdict(key);
  if (builtin != ParamVerdict::kKeep) return builtin;
  for (const std::string& drop : policy.drop_params()) {
    if (EqualsLower(key, drop)) return ParamVerdict::kPolicy;
  }
  if (rule != nullptr) {
    for (const std::string& drop : rule->drop_params) {
      if (EqualsLower(key, drop)) return ParamVerdict::kPolicy;
    }
    if (!rule->allow_params.empty() &&
        std::find(rule->allow_params.begin(), rule->allow_params.end(), key) ==
            rule->allow_params.end()) {
      return ParamVerdict::kNotAllowed;
    }
  }
  return ParamVerdict::kKeep;
}

// SplitAndClassify splits `q` at '&', normalizes each parameter's escapes
// and keeps those ClassifyParam keeps, reporting why the others went.
void SplitAndClassify(absl::string_view q, const UrlPolicy& policy, const HostRule* rule,
                      QueryScratch* scratch, FiredRules* fired) {
  std::string& query = scratch->query;
  query.clear();
  std::vector<Param>& params = scratch->params;
  params.clear();
  bool tracking = false, session = false, by_policy = false, not_allowed = false,
       empty_param = false, escapes = false;
  if (!q.empty()) {  // a bare '?' has no parameters, not one empty one
    size_t start = 0;
    while (start <= q.size()) {
      size_t amp = q.find('&', start);
      if (amp == absl::string_view::npos) amp = q.size();
      const absl::string_view piece = q.substr(start, amp - start);
      start = amp + 1;
      if (piece.empty()) {
        empty_param = true;
        continue;
      }
      const size_t offset = query.size();
      const bool piece_escapes = AppendNormalizedEscapes(piece, &query);
      const absl::string_view normalized = absl::string_view(query).substr(offset);
      const size_t eq = normalized.find('=');
      const size_t key_size = eq == absl::string_view::npos ? normalized.size() : eq;
      switch (ClassifyParam(normalized.substr(0, key_size), policy, rule, &scratch->key)) {
        case ParamVerdict::kKeep:
          escapes |= piece_escapes;
          params.push_back(Param{static_cast<uint32_t>(offset),
                                 static_cast<uint32_t>(normalized.size()),
                                 static_cast<uint32_t>(key_size)});
          continue;
        case ParamVerdict::kTracking:
          tracking = true;
          break;
        case ParamVerdict::kSession:
          session = true;
          break;
        case ParamVerdict::kPolicy:
          by_policy = true;
          break;
        case ParamVerdict::kNotAllowed:
          not_allowed = true;
          break;
      }
      query.resize(offset);  // dropped
    }
  }
  if (escapes) fired->Add(url_rules::kPercentEncodingNormalized);
  if (tracking) fired->Add(url_rules::kTrackingParamsDropped);
  if (session) fired->Add(url_rules::kSessionParamsDropped);
  if (by_policy) fired->Add(url_rules::kPolicyParamsDropped);
  if (not_allowed) fired->Add(url_rules::kParamsNotAllowlistedDropped);
  if (empty_param) fired->Add(url_rules::kEmptyParamsDropped);
}

}  // namespace

void NormalizeQuery(absl::string_view q, bool has_query, const UrlPolicy& policy,
                    const HostRule* rule, QueryScratch* scratch, FiredRules* fired) {
  SplitAndClassify(q, policy, rule, scratch, fired);
  const std::vector<Param>& params = scratch->params;
  const std::string& query = scratch->query;

  // Stable sort by the normalized key, bytewise.
  auto key_of = [&](uint32_t i) {
    return absl::string_view(query).substr(params[i].offset, params[i].key_size);
  };
  auto by_key = [&](uint32_t a, uint32_t b) { return key_of(a) < key_of(b); };
  std::vector<uint32_t>& order = scratch->order;
  order.clear();
  for (uint32_t i = 0; i < params.size(); ++i) order.push_back(i);
  if (!std::is_sorted(order.begin(), order.end(), by_key)) {
    std::stable_sort(order.begin(), order.end(), by_key);
    fired->Add(url_rules::kParamsSorted);
  }
  if (has_query && params.empty()) fired->Add(url_rules::kEmptyQueryDropped);
}

}  // namespace url_internal
}  // namespace dedupd

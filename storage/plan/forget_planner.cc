#include "storage/plan/forget_planner.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "common/status_macros.h"

namespace dedupd {

void TextForgetPlan::Count(const Sha256Digest& sha256, ForgetResult* result) const {
  if (remove_url_alias) ++result->aliases_removed;
  if (action == Action::kDeleteText) ++result->contents_removed;
  if (action == Action::kPromoteAlias) {
    result->contents_promoted.push_back({sha256, new_owner});
  }
}

TextForgetPlan PlanTextForget(absl::string_view url, const ContentRecord& record,
                              absl::Span<const AliasRecord> aliases) {
  TextForgetPlan plan;
  std::vector<const AliasRecord*> others;  // the aliases that stay aliases
  others.reserve(aliases.size());
  for (const AliasRecord& a : aliases) {
    if (a.url == url) {
      plan.remove_url_alias = true;
    } else {
      others.push_back(&a);
    }
  }
  if (record.owner_url != url) {
    if (!plan.remove_url_alias) return plan;  // kNone: nothing names the URL now
    plan.action = TextForgetPlan::Action::kDropAlias;
    plan.record = record;
    plan.record.alias_count = others.size();
    return plan;
  }
  if (others.empty()) {
    plan.action = TextForgetPlan::Action::kDeleteText;
    return plan;
  }
  // The oldest alias becomes the owner; ties by URL bytes, so the choice is
  // deterministic whatever order the backend lists the aliases in.
  const AliasRecord* next = *std::min_element(
      others.begin(), others.end(), [](const AliasRecord* a, const AliasRecord* b) {
        return a->added != b->added ? a->added < b->added : a->url < b->url;
      });
  plan.action = TextForgetPlan::Action::kPromoteAlias;
  plan.new_owner = next->url;
  plan.record = record;
  plan.record.owner_url = next->url;
  plan.record.alias_count = others.size() - 1;
  // The claim id was the forgotten owner's: nobody retries it as this one.
  plan.record.claim_id_hash = 0;
  return plan;
}

absl::StatusOr<std::vector<ForgetResult::ChunkPromotion>> PlanChunkOwnerPromotions(
    absl::string_view url, const ChunkManifest& manifest, ChunkStateReader* reader) {
  // The document's texts, with how many of its chunks hold each.
  std::vector<std::pair<Sha256Digest, size_t>> held;
  for (const StoredChunk& c : manifest.chunks) {
    auto it =
        std::find_if(held.begin(), held.end(), [&](const auto& h) { return h.first == c.sha256; });
    if (it == held.end()) {
      held.emplace_back(c.sha256, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<ForgetResult::ChunkPromotion> promoted;
  for (const auto& [sha, mine] : held) {
    DEDUPD_ASSIGN_OR_RETURN(std::optional<ChunkTextRecord> text, reader->GetText(sha));
    if (!text.has_value()) continue;
    // Owned by another document (named in the record): no holder scan.
    if (text->owner.has_value() && text->owner->document_url != url) continue;
    // This document's holders of the text are at most `mine`, so the first
    // mine + 1 holders name the next owner when there is one.
    DEDUPD_ASSIGN_OR_RETURN(std::vector<ChunkHolder> holders,
                            ListAllHolders(reader, sha, *text, mine + 1));
    if (holders.empty() || holders.front().document_url != url) continue;
    for (const ChunkHolder& h : holders) {
      if (h.document_url == url) continue;
      promoted.push_back({sha, h.document_url, h.chunk_id});
      break;
    }
  }
  return promoted;
}

}  // namespace dedupd

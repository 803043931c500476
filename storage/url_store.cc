#include "storage/url_store.h"

#include "absl/strings/str_cat.h"

namespace dedupd {

absl::Status CheckUrlKeys(absl::Span<const std::string> keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("key ", i, " of the batch is empty"));
    }
  }
  return absl::OkStatus();
}

}  // namespace dedupd

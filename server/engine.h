// engine.h: the service's logic, free of gRPC: takes the API's proto
// messages, returns absl::Status. The gRPC adapter (service.h) is a few lines
// per RPC around it.
//
// Example:
//   UrlNormalizer normalizer(config.url_policy);
//   Engine engine(&normalizer, store.get(), EngineOptions{});
//   v1::CheckUrlResponse response;
//   absl::Status s = engine.CheckUrl(request, &response);
#ifndef DEDUPD_SERVER_ENGINE_H_
#define DEDUPD_SERVER_ENGINE_H_

#include <cstddef>
#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/url_normalizer.h"
#include "dedupd/v1/dedupd.pb.h"
#include "storage/url_store.h"

namespace dedupd {

struct EngineOptions {
  // Most items one CheckUrl request may carry; more is INVALID_ARGUMENT.
  // Default: 10,000.
  size_t max_batch_items = 10000;
  // The clock stamped on new records. Default: absl::Now.
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

// Engine: thread-safe; holds no state of its own beyond its options.
class Engine {
 public:
  // REQUIRES: `normalizer` and `store` outlive the engine.
  Engine(const UrlNormalizer* normalizer, UrlStore* store,
         EngineOptions options);

  // CheckUrl answers one result per request item, in order (see
  // proto/dedupd/v1/dedupd.proto). A bad item gets URL_VERDICT_INVALID with
  // the normalizer's reason; it never fails the request.
  // Errors: InvalidArgument for an empty request or more than
  // max_batch_items items (the message names the limit); the store's code
  // (Unavailable, ResourceExhausted, DataLoss, Internal), with context, when
  // the store fails — then nothing in the response is an answer.
  absl::Status CheckUrl(const v1::CheckUrlRequest& request,
                        v1::CheckUrlResponse* response) const;

 private:
  const UrlNormalizer* normalizer_;
  UrlStore* store_;
  EngineOptions options_;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_ENGINE_H_

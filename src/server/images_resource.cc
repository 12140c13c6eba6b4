// GET /v1/images: the images in the daemon's image store (docs/api.md, docs/images.md), what
// `llm-sandbox image ls --json` prints. The store is the daemon's, shared by every token, like the
// policies: each caller sees the same list.
#include "server/api_error.h"
#include "server/routes.h"

namespace lsb::server {
namespace {

using nlohmann::json;

json ImageJson(const image::Store& store, const image::StoredImage& e) {
  auto ref = image::ParseImageReference(e.reference);
  json j = {{"name", ref.ok() ? ref->Familiar() : e.reference},
            {"reference", e.reference},
            {"digest", e.manifest_digest},
            {"platform", e.os + "/" + e.architecture},
            {"imported", e.imported}};
  auto info = ref.ok() ? store.Inspect(*ref) : Result<image::ImageInfo>(ref.error());
  if (info.ok()) {
    j["size"] = info->unpacked_bytes;
    j["compressed_size"] = info->compressed_bytes;
    j["layers"] = info->layers.size();
    j["created"] = info->created;
  } else {  // listed in the index but not readable whole: said, not hidden
    j["error"] = info.error().message;
  }
  return j;
}

}  // namespace

void AddImageRoutes(Router& router, ServerContext& ctx) {
  router.Add("GET", "/v1/images", [&ctx](HttpRequest&, ResponseStream&) -> Reply {
    if (!ctx.images)
      return ErrorResponse(NotFound("this daemon has no image store (it had no directory for one: start it with "
                                    "--store DIR); its images come from the image map only"));
    auto store = ctx.images->Get();
    if (!store.ok()) return ErrorResponse({ApiCode::kInternal, store.error().message});
    auto entries = (*store)->List();
    if (!entries.ok()) return ErrorResponse({ApiCode::kInternal, entries.error().message});
    json list = json::array();
    for (const auto& e : *entries) list.push_back(ImageJson(**store, e));
    return JsonResponse(200, {{"images", list}});
  });
}

}  // namespace lsb::server

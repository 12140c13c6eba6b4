#include "image/layout_refs.h"

#include "image/oci_json.h"
#include "image/safe_fs.h"
#include "image/store_source.h"

namespace lsb::image {

Result<std::vector<ImageReference>> LayoutReferences(const std::string& layout_dir, const ImageLimits& limits) {
  // field "name": what --name would fix (the CLI says so as a usage error).
  auto fail = [&](const std::string& why, const char* field = "") {
    return Error{ErrorCode::kInvalidArgument, "import " + layout_dir + ": " + why, field};
  };
  LSB_ASSIGN_OR_RETURN(UniqueFd root, OpenDir(layout_dir));
  if (!OpenRegularInRoot(root.get(), "oci-layout").ok()) return fail("not an OCI image layout (no oci-layout file)");
  LSB_ASSIGN_OR_RETURN(UniqueFd index_fd, OpenRegularInRoot(root.get(), "index.json"));
  LSB_ASSIGN_OR_RETURN(std::string text, ReadSmallFd(index_fd.get(), limits.max_json_bytes, "index.json"));
  LSB_ASSIGN_OR_RETURN(Index index, ParseIndex(text, limits.max_json_bytes));
  if (index.manifests.empty()) return fail("its index.json lists no image");
  std::vector<ImageReference> refs;
  for (const auto& d : index.manifests) {
    const std::string& n = d.ref_name;
    if (n.empty())
      return fail("the image " + d.digest + " has no name (no org.opencontainers.image.ref.name in index.json); "
                  "name it with --name REF", "name");
    // A bare word is the tag skopeo's oci:DIR:TAG writes, not an image's name.
    if (n.find_first_of(":/@") == std::string::npos)
      return fail("the layout names its image only by the tag '" + n + "'; name it with --name REF (e.g. " +
                  "--name python:" + n + "), or copy it as oci:DIR:NAME:TAG (skopeo copy "
                  "docker://python:3.12-slim oci:DIR:python:3.12-slim)", "name");
    auto ref = ParseImageReference(n);
    if (!ref.ok())
      return fail("its image name '" + n.substr(0, 256) + "' is not a reference: " + ref.error().message +
                  "; name it with --name REF", "name");
    refs.push_back(*ref);
  }
  return refs;
}

}  // namespace lsb::image

// The names an OCI image layout gives its own images (issue 37: `image import DIR` without
// --name): index.json's org.opencontainers.image.ref.name of each entry, when it is a reference
// ("python:3.12-slim", "docker.io/library/python:3.12-slim"). skopeo writes what follows
// `oci:DIR:` there, so `skopeo copy docker://python:3.12-slim oci:DIR:python:3.12-slim` names it
// fully, while `oci:DIR:3.12-slim` leaves only a tag, which names no image: refused, with the fix.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "image/limits.h"
#include "image/reference.h"

namespace lsb::image {

// Every entry's reference, in index order; an error naming the entry when one has no ref.name or
// only a tag, or when there is none at all. An error --name would fix has field "name".
Result<std::vector<ImageReference>> LayoutReferences(const std::string& layout_dir, const ImageLimits& limits);

}  // namespace lsb::image

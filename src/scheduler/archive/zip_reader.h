// A bounded zip reader for archives into a box (archive_in.h): the central directory is the list
// of entries (its names must match the local headers', so two readers cannot see two archives),
// stored and deflate (zlib) only, every size claim checked against the bounds before anything is
// inflated, every entry's CRC-32 verified. Zip64, encryption, multi-disk archives and entries the
// creating system marked as symbolic links or special files are refused.
#pragma once

#include <string_view>

#include "base/result.h"
#include "scheduler/archive/archive_entries.h"

namespace lsb::sched {

Status ReadZipEntries(std::string_view zip, const ArchiveLimits& limits, ArchiveEntries& entries);

}  // namespace lsb::sched

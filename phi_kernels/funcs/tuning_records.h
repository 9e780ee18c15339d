// Note [Tuning records] (docs/notes/cpu_speed_steps.md): the choices a kernel's first-call
// tuning made (which convolution candidate won on a geometry), kept in a small file per
// machine and build so that a later process takes them without timing anything again.
// A record is only a hint: whatever it names must still be buildable, else the caller
// times its candidates as it would without one. Reading and writing never throw; a
// missing, unreadable or corrupt file reads as no records.
#pragma once

#include <string>

#include <gflags/gflags.h>

DECLARE_string(oar_tuning_cache);

namespace oar::phi {

/// The choice recorded for `key` in `table` ("conv", ...) by this or an earlier process
/// under the same `context` (what else the choice depends on: a library's version, its
/// ISA), "" when there is none or records are off (FLAGS_oar_tuning_cache).
std::string recall_choice(const char* table, const std::string& context, const std::string& key);

/// Records `choice` for `key` (appended to the table's file; later records win).
void record_choice(const char* table, const std::string& context, const std::string& key, const std::string& choice);

/// The file `table`'s records live in under the current flag, "" when records are off.
std::string tuning_records_path(const char* table, const std::string& context);

}  // namespace oar::phi

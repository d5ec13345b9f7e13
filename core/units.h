// Binary byte units, defined once for every folder: a GPU's memory and L2 in the catalog, byte
// counts shown in GiB. Integers, so that a size built from them stays exact; a double divided by
// one (bytes / kGiB) is a double.
#ifndef WAVECREST_CORE_UNITS_H_
#define WAVECREST_CORE_UNITS_H_

#include <cstdint>

namespace wavecrest {

inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace wavecrest

#endif  // WAVECREST_CORE_UNITS_H_

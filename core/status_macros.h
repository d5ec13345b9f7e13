// Status propagation helpers in the style of Abseil's internal macros (which are not public).
#ifndef WAVECREST_CORE_STATUS_MACROS_H_
#define WAVECREST_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define WC_CONCAT_INNER_(a, b) a##b
#define WC_CONCAT_(a, b) WC_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    ::absl::Status wc_status_ = (expr);      \
    if (!wc_status_.ok()) return wc_status_; \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, Foo())` evaluates Foo() (an absl::StatusOr<T>), returns its status when
// it is not OK and otherwise moves its value into the declaration on the left.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  WC_ASSIGN_OR_RETURN_IMPL_(WC_CONCAT_(wc_statusor_, __LINE__), lhs, rexpr)
#define WC_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()

#endif  // WAVECREST_CORE_STATUS_MACROS_H_

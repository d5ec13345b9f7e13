// Loading libcudnn.so.9 and reading its errors (gpu_worker/cuda/cudnn_api.h).
#include "gpu_worker/cuda/cudnn_api.h"

#ifdef WAVECREST_HAVE_CUDNN_HEADERS

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace wavecrest::engine {
namespace {

// `*fn` = libcudnn's `name`; the first one missing is the API's error.
template <typename F>
void BindCudnnEntry(CudnnApi* api, F* fn, const char* name) {
  *fn = reinterpret_cast<F>(dlsym(api->lib, name));
  if (*fn == nullptr && api->error.empty()) api->error = absl::StrCat("libcudnn has no ", name);
}

}  // namespace

const CudnnApi& Cudnn() {
  static const CudnnApi* api = [] {
    auto* a = new CudnnApi;
    for (const char* name : {"libcudnn.so.9", "libcudnn.so"}) {
      a->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (a->lib != nullptr) break;
      const char* e = dlerror();
      a->error = e != nullptr ? e : absl::StrCat(name, ": cannot load");
    }
    if (a->lib == nullptr) return a;
    a->error.clear();
    BindCudnnEntry(a, &a->get_version, "cudnnGetVersion");
    BindCudnnEntry(a, &a->error_string, "cudnnGetErrorString");
    BindCudnnEntry(a, &a->create, "cudnnCreate");
    BindCudnnEntry(a, &a->destroy, "cudnnDestroy");
    BindCudnnEntry(a, &a->set_stream, "cudnnSetStream");
    BindCudnnEntry(a, &a->create_desc, "cudnnBackendCreateDescriptor");
    BindCudnnEntry(a, &a->destroy_desc, "cudnnBackendDestroyDescriptor");
    BindCudnnEntry(a, &a->set, "cudnnBackendSetAttribute");
    BindCudnnEntry(a, &a->get, "cudnnBackendGetAttribute");
    BindCudnnEntry(a, &a->finalize, "cudnnBackendFinalize");
    BindCudnnEntry(a, &a->execute, "cudnnBackendExecute");
    a->last_error =
        reinterpret_cast<void (*)(char*, size_t)>(dlsym(a->lib, "cudnnGetLastErrorString"));
    if (a->ok() && a->get_version() < 90000) {
      a->error =
          absl::StrCat("libcudnn is version ", a->get_version(), "; fused attention needs 9");
    }
    return a;
  }();
  return *api;
}

absl::Status CudnnCheck(cudnnStatus_t s, absl::string_view what) {
  if (s == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const CudnnApi& api = Cudnn();
  std::string detail;
  if (api.last_error != nullptr) {
    char buf[512] = {0};
    api.last_error(buf, sizeof(buf));
    if (buf[0] != '\0') detail = absl::StrCat(" (", buf, ")");
  }
  return absl::FailedPreconditionError(
      absl::StrCat("cuDNN ", what, ": ", api.error_string(s), detail));
}

}  // namespace wavecrest::engine

#endif  // WAVECREST_HAVE_CUDNN_HEADERS

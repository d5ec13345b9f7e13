#include "gpu_worker/cuda/cudnn_sdpa.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace wavecrest::engine {
namespace {

// libcudnn.so.9, opened once for the process (never closed: cuDNN keeps state until exit).
struct Cudnn {
  void* handle = nullptr;
  std::string error;
  size_t (*get_version)() = nullptr;
};

const Cudnn& Library() {
  static const Cudnn* lib = [] {
    auto* c = new Cudnn;
    for (const char* name : {"libcudnn.so.9", "libcudnn.so"}) {
      c->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (c->handle != nullptr) break;
      const char* e = dlerror();
      c->error = e != nullptr ? e : absl::StrCat(name, ": cannot load");
    }
    if (c->handle != nullptr) {
      c->get_version = reinterpret_cast<size_t (*)()>(dlsym(c->handle, "cudnnGetVersion"));
      if (c->get_version == nullptr) c->error = "libcudnn has no cudnnGetVersion";
    }
    return c;
  }();
  return *lib;
}

}  // namespace

std::string CudnnVersion(bool* loaded) {
  const Cudnn& c = Library();
  *loaded = c.get_version != nullptr;
  if (!*loaded) return c.error;
  const size_t v = c.get_version();  // 9.10.2 is 91002
  return absl::StrCat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
}

absl::StatusOr<std::unique_ptr<SdpaRunner>> MakeCudnnSdpa(const LayerOp& op, DType dtype,
                                                          bool training, cudaStream_t stream) {
  (void)dtype;
  (void)training;
  (void)stream;
  bool loaded = false;
  const std::string version = CudnnVersion(&loaded);
  if (!loaded) {
    return absl::FailedPreconditionError(
        absl::StrCat("fused attention needs cuDNN 9, which this worker cannot load (", version,
                     "): layers with fused attention are predicted"));
  }
  // The SDPA operation graph (Q·Kᵀ, scale, causal mask, softmax with statistics, P·V, and its
  // backward) is not driven through cuDNN's backend API yet: refuse, so that the server predicts
  // these layers and says so, rather than time something else under this name.
  return absl::FailedPreconditionError(
      absl::StrCat("cuDNN ", version,
                   " is loaded, but this worker does not drive its scaled-dot-product "
                   "attention graph yet: ",
                   op.name,
                   " (and layers with fused attention) are predicted; "
                   "unfused attention and layers with it are measured"));
}

}  // namespace wavecrest::engine

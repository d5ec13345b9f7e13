#include "server/malformed_request.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "grpcpp/support/interceptor.h"
#include "grpcpp/support/status.h"

namespace wavecrest {
namespace {

using grpc::experimental::InterceptionHookPoints;

class MalformedRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequestInterceptor(grpc::experimental::ServerRpcInfo* info)
      : method_(info->method() != nullptr ? info->method() : "") {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      malformed_ = true;
    }
    if (malformed_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("request: the body does not parse as the request message of ", method_,
                       " (truncated, or another message's bytes)")));
    }
    methods->Proceed();
  }

 private:
  std::string method_;
  bool malformed_ = false;
};

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MalformedRequestInterceptor(info);
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MalformedRequestInterceptorFactory() {
  return std::make_unique<Factory>();
}

}  // namespace wavecrest

// A request body that does not parse as its method's protobuf message gets INVALID_ARGUMENT
// naming the method, not gRPC's UNIMPLEMENTED with an empty message: gRPC 1.51's callback
// handlers answer every failed deserialisation with UNIMPLEMENTED before any service code runs
// (CallbackUnaryHandler::RunHandler), so a server interceptor notes the failed parse
// (POST_RECV_MESSAGE without a message) and rewrites that one status on its way out.
#ifndef WAVECREST_SERVER_MALFORMED_REQUEST_H_
#define WAVECREST_SERVER_MALFORMED_REQUEST_H_

#include <memory>

#include "grpcpp/support/server_interceptor.h"

namespace wavecrest {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MalformedRequestInterceptorFactory();

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_MALFORMED_REQUEST_H_

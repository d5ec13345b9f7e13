"""Generated protobuf and gRPC stubs of wavecrest.v1 (scripts/gen-python-stubs.sh)."""

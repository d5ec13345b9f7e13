# syntax=docker/dockerfile:1
# wavecrest: one image for the server and the GPU worker (the first argument picks: `server`,
# `worker`, or `cli`), built on NVIDIA's CUDA images for Ubuntu 24.04, whose gRPC 1.51,
# protobuf 3.21 and Abseil 20220623 are the versions this project builds and tests with on
# Debian 12. The build stage runs the same scripts as a developer's machine
# (scripts/install-deps.sh --build-only, scripts/container-build.sh); the runtime stage holds
# only the programs, the libraries they load, the dashboard and the example models, and runs as
# a non-root user.
#
#   docker build -t wavecrest .
#   docker run --rm -p 50051:50051 -p 8080:8080 -p 9464:9464 wavecrest server --workers=auto
#   docker run --rm --gpus all wavecrest worker --device=0 --listen=0.0.0.0:50061
#
# The worker needs an NVIDIA driver that runs the image's CUDA: 580 or newer for CUDA 13 (the
# label wavecrest.required-driver says it). For older drivers build on CUDA 12 (the code uses no
# CUDA 13-only API; not built here, which has only CUDA 13):
#   docker build --build-arg CUDA_VERSION=12.8.1 --build-arg REQUIRED_DRIVER=570 -t wavecrest:cuda12 .
# The server alone needs no CUDA and no GPU: a smaller image without it,
#   docker build --target server-cpu -t wavecrest-server .

ARG CUDA_VERSION=13.0.1
ARG UBUNTU=ubuntu24.04
ARG REQUIRED_DRIVER=580

# ---- the dashboard (TypeScript, Vite) ------------------------------------------------------
FROM node:20-bookworm-slim AS web
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
ENV PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
RUN npm ci --no-audit --no-fund --loglevel=error
COPY web/ ./
RUN npx --no-install tsc --noEmit && npx --no-install vite build --logLevel warn

# ---- the programs (C++, CUDA) ----------------------------------------------------------------
FROM nvidia/cuda:${CUDA_VERSION}-devel-${UBUNTU} AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN bash scripts/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
RUN bash scripts/container-build.sh /src /opt/wavecrest /tmp/build

# ---- the server without CUDA (--target server-cpu) ---------------------------------------------
FROM ubuntu:24.04 AS build-cpu
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN bash scripts/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
RUN CMAKE_EXTRA=-DWAVECREST_CUDA=OFF bash scripts/container-build.sh /src /opt/wavecrest /tmp/build

FROM ubuntu:24.04 AS server-cpu
LABEL org.opencontainers.image.title="wavecrest-server" \
      org.opencontainers.image.description="Hardware-efficient transformer shapes: the gRPC/HTTP advisor (no CUDA; GPU workers run the wavecrest image)"
COPY --from=build-cpu /opt/wavecrest/bin/ /opt/wavecrest/bin/
COPY --from=build-cpu /opt/wavecrest/lib/ /opt/wavecrest/lib/
COPY --from=web /src/web/dist/ /opt/wavecrest/share/web/
COPY examples/models/ /opt/wavecrest/share/models/
COPY deploy/docker-entrypoint.sh deploy/image-setup.sh /opt/wavecrest/bin/
RUN sh /opt/wavecrest/bin/image-setup.sh
ENV PATH=/opt/wavecrest/bin:$PATH
USER 10001
WORKDIR /var/lib/wavecrest
EXPOSE 50051 8080 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["docker-entrypoint.sh", "healthcheck"]
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["server"]

# ---- runtime: server and GPU worker (the default target) --------------------------------------
FROM nvidia/cuda:${CUDA_VERSION}-runtime-${UBUNTU} AS runtime
ARG REQUIRED_DRIVER
LABEL org.opencontainers.image.title="wavecrest" \
      org.opencontainers.image.description="Hardware-efficient transformer shapes: gRPC/HTTP advisor and GPU timing worker" \
      wavecrest.required-driver=">=${REQUIRED_DRIVER}"
COPY --from=build /opt/wavecrest/bin/ /opt/wavecrest/bin/
COPY --from=build /opt/wavecrest/lib/ /opt/wavecrest/lib/
COPY --from=web /src/web/dist/ /opt/wavecrest/share/web/
COPY examples/models/ /opt/wavecrest/share/models/
COPY deploy/docker-entrypoint.sh deploy/image-setup.sh /opt/wavecrest/bin/
RUN sh /opt/wavecrest/bin/image-setup.sh
ENV PATH=/opt/wavecrest/bin:$PATH
USER 10001
WORKDIR /var/lib/wavecrest
# gRPC, HTTP (API and dashboard), Prometheus metrics; a worker listens on 50061.
EXPOSE 50051 8080 9464 50061
# The gRPC health service (a worker's answers on 50061 with WAVECREST_HEALTH_ADDRESS set).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["docker-entrypoint.sh", "healthcheck"]
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["server"]

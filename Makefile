# The README's two commands: `make demo` and `make test`. Both install missing Debian packages
# first (scripts/install-deps.sh), then configure and build with CMake.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
# Optimised, with line tables for backtraces (-g1): full debug info (-g) made each compile unit
# about 1.25x slower (service/convert.cc: 13.9 s against 11.2 s with g++ 12) and the objects 5x
# larger, for variables nobody reads in CI. A fresh BUILD_DIR with CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo"
# gives CMake's -O2 -g for a debugger.
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"

.PHONY: all deps configure build programs web test test-fast sanitize demo bench bench-check bench-web \
	image image-push clean

all: build

deps:
	bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The three programs alone (the CLI, the server, the worker), without the tests and benchmarks:
# what the demo builds (the CLI first). `make build` (and `make test`) builds the rest in the same
# tree. One CMake target (`programs`, CMakeLists.txt), so that the three build in parallel.
programs: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target programs

# The dashboard (web/dist), served by wavecrest-server --http_static_dir.
web: deps
	bash scripts/web.sh build

# The whole suite, then the same suite under ASan+UBSan and a short run of every fuzz target.
test: test-fast sanitize

test-fast: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 300

sanitize: deps
	bash scripts/sanitize.sh

# The CLI first, answering offline; then the server, the worker and the dashboard (scripts/demo.sh).
demo: configure
	bash scripts/demo.sh $(BUILD_DIR) $(JOBS)

bench: build
	bash scripts/bench.sh $(BUILD_DIR)

bench-check: build
	bash scripts/bench-check.sh $(BUILD_DIR)

bench-web: build
	bash scripts/web.sh bench $(BUILD_DIR)

# The image, and publishing it: REGISTRY names where (registry.example.com/team); the tag is the
# project's version. deploy/k8s takes the same name (docs/deployment.md, "Publishing the image").
IMAGE_VERSION ?= $(shell sed -nE '/^project/ s/.* VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
image:
	docker build -t wavecrest:$(IMAGE_VERSION) .

image-push: image
	@test -n "$(REGISTRY)" || { echo "image-push: set REGISTRY (e.g. REGISTRY=ghcr.io/acme)"; exit 2; }
	docker tag wavecrest:$(IMAGE_VERSION) $(REGISTRY)/wavecrest:$(IMAGE_VERSION)
	docker push $(REGISTRY)/wavecrest:$(IMAGE_VERSION)

clean:
	rm -rf $(BUILD_DIR) build-sanitize

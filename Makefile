# The README's two commands: `make demo` and `make test`. Both install missing Debian packages
# first (scripts/install-deps.sh), then configure and build with CMake.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps configure build web test test-fast sanitize demo bench bench-check bench-web clean

all: build

deps:
	bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The dashboard (web/dist), served by wavecrest-server --http_static_dir.
web: deps
	bash scripts/web.sh build

# The whole suite, then the same suite under ASan+UBSan and a short run of every fuzz target.
test: test-fast sanitize

test-fast: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 300

sanitize: deps
	bash scripts/sanitize.sh

demo: build web
	bash scripts/demo.sh $(BUILD_DIR)

bench: build
	bash scripts/bench.sh $(BUILD_DIR)

bench-check: build
	bash scripts/bench-check.sh $(BUILD_DIR)

bench-web: build
	bash scripts/web.sh bench $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) build-sanitize

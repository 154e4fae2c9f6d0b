# evalprof front door.  Meson and Ninja do the building; this file only
# bootstraps them and names the everyday jobs.
#
#   make            build everything into build/ (build/evalprof)
#   make test       bootstrap test dependencies, build, run every suite
#   make demo       trace the bundled example workload and show the reports
#   make bench      run the benchmarks (figures beside same-run baselines)
#   make cpython    build instrumented CPython (CPYTHON=3.13|3.11, CPYTHON_SRC=DIR)
#   make asan       the sanitizer runs alone (ASan+UBSan suites, TSan recorder)
#   make fuzz       build the libFuzzer targets and run each for a while

BUILD ?= build
MESON_OPTS ?=

.PHONY: all build bootstrap test demo bench cpython asan fuzz clean format

all: build

bootstrap:
	@sh tools/bootstrap.sh build

$(BUILD)/build.ninja:
	@sh tools/bootstrap.sh build
	meson setup $(BUILD) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	@ninja -C $(BUILD)

test:
	@sh tools/bootstrap.sh test
	@$(MAKE) --no-print-directory build
	@sh tools/run-tests.sh $(BUILD)

demo: build
	@sh tools/demo.sh $(BUILD)

bench: build
	@sh bench/run.sh $(BUILD)

cpython: build
	@sh cpython/build.sh $(if $(CPYTHON),--version $(CPYTHON)) $(if $(CPYTHON_SRC),--src $(CPYTHON_SRC))

asan:
	@sh tools/bootstrap.sh test
	@sh tools/sanitize-tests.sh asan tsan

fuzz:
	@sh tools/bootstrap.sh test
	@[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
	@ninja -C build-fuzz
	@sh tests/fuzz/run.sh build-fuzz $${FUZZ_SECONDS:-60}

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-fuzz

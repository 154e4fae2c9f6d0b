# evalprof front door.  Meson and Ninja do the building; this file only
# bootstraps them and names the everyday jobs.
#
#   make            build everything into build/ (build/evalprof), configuring
#                   build/ first (again when bootstrap packages changed)
#   make test       bootstrap test dependencies, build, run every suite
#   make demo       trace the bundled example workload and show the reports
#   make bench      run the benchmarks (figures beside same-run baselines)
#   make cpython    build instrumented CPython (CPYTHON=3.13|3.11, CPYTHON_SRC=DIR)
#   make pythons    CPython 3.14 and 3.15 from Debian's testing suite in a
#                   private root kept in a cache outside the tree
#                   (EVALPROF_PYTHONS_CACHE), and their launchers
#                   $(BUILD)/pythons/python3.14, python3.15 (tools/pythons.sh);
#                   `make test` makes them first
#   make asan       the sanitizer runs alone (ASan+UBSan suites, TSan recorder,
#                   the sampled mode's stress test under both)
#   make fuzz       build the libFuzzer targets and run each for a while
#   make install    install into PREFIX (default /usr/local; DESTDIR=DIR
#                   stages it there): the binary, the Python package for
#                   each interpreter built for, the recorder library,
#                   headers and evalprof.pc, man pages, bash completion

BUILD ?= build
MESON_OPTS ?=
PREFIX ?= /usr/local
DESTDIR ?=

# What $(BUILD) was configured with: the bootstrap's build and test
# packages, as installed then.  When they change (`make demo` configured
# a fresh machine without the test group's cmocka, then `make test`
# installed it), $(BUILD) is configured again, so that the tests left out
# before are built now.  The same when the 3.14/3.15 launchers came or
# went ($(BUILD)/pythons/status), so that the extension is built for them.
PACKAGES = $(BUILD)/bootstrap-packages

.PHONY: all build configure bootstrap test demo bench cpython pythons asan fuzz clean format install

all: build

bootstrap:
	@sh tools/bootstrap.sh build

configure:
	@sh tools/bootstrap.sh build
	@now=$$(sh tools/bootstrap.sh --state build test) || exit 1; \
	now="$$now$$(printf '\npythons: '; head -n 1 $(BUILD)/pythons/status 2>/dev/null)"; \
	if [ ! -f $(BUILD)/build.ninja ]; then \
	    meson setup $(BUILD) $(MESON_OPTS) || exit 1; \
	elif [ "$$now" != "$$(cat $(PACKAGES) 2>/dev/null)" ]; then \
	    echo "make: packages or the 3.14/3.15 launchers changed since $(BUILD) was configured: configuring it again"; \
	    meson setup --reconfigure $(BUILD) $(MESON_OPTS) || exit 1; \
	fi; \
	printf '%s\n' "$$now" > $(PACKAGES)

build: configure
	@ninja -C $(BUILD)

test:
	@sh tools/bootstrap.sh test
	@sh tools/pythons.sh $(BUILD) || true
	@$(MAKE) --no-print-directory build
	@sh tools/run-tests.sh $(BUILD)

pythons:
	@sh tools/pythons.sh $(BUILD)

demo: build
	@sh tools/demo.sh $(BUILD)

bench: build
	@sh bench/run.sh $(BUILD)

cpython: build
	@sh cpython/build.sh $(if $(CPYTHON),--version $(CPYTHON)) $(if $(CPYTHON_SRC),--src $(CPYTHON_SRC)) $(if $(filter no,$(PGO)),--no-pgo)

asan:
	@sh tools/bootstrap.sh test
	@sh tools/sanitize-tests.sh asan tsan

fuzz:
	@sh tools/bootstrap.sh test
	@[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
	@ninja -C build-fuzz
	@sh tests/fuzz/run.sh build-fuzz $${FUZZ_SECONDS:-60}

install: $(BUILD)/build.ninja
	@meson configure $(BUILD) -Dprefix=$(abspath $(PREFIX))
	@meson install -C $(BUILD) $(if $(DESTDIR),--destdir $(abspath $(DESTDIR)))

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-fuzz

# Canopy — set-up, tests, demo, benchmarks. Tests use Swift Testing only (`--disable-xctest`: no empty XCTest run first).
# `make test` and `make demo` work on a machine that has never seen the project: they install liblmdb-dev first
# when pkg-config cannot find LMDB.

SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)

.PHONY: deps test demo bench bench-xproc build clean docs docs-check

deps:
	@if ! pkg-config --exists lmdb 2>/dev/null; then \
		echo "LMDB not found by pkg-config: installing liblmdb-dev (and pkg-config, lmdb-utils) with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq liblmdb-dev pkg-config lmdb-utils >/dev/null; \
	fi
	@pkg-config --exists lmdb || { echo "error: liblmdb-dev is still missing; install it and retry" >&2; exit 1; }
	@if ! command -v tmux >/dev/null 2>&1; then \
		echo "tmux not found: installing it with apt-get (the reminders tui test drives it in a pseudo-terminal)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq tmux >/dev/null; \
	fi

build: deps
	$(SWIFT) build

# At most CANOPY_TEST_WIDTH test cases run at once (Swift Testing's SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH;
# a toolchain without it ignores it): otherwise every test starts at once and queues on Swift's cooperative pool (a
# thread per core), and a suspended async test resumes, and a time limit is checked, only after every test queued
# before it, which on a loaded 2-core machine passed a one-minute limit. Tests that wait run off the pool (`.ownThread`).
CANOPY_TEST_WIDTH ?= 6

test: deps
	$(SWIFT) build --build-tests
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(CANOPY_TEST_WIDTH) $(SWIFT) test --skip-build --disable-xctest

# `reminders demo`: a fresh database in a temporary folder, two weeks of items, scripted edits with each changeset.
demo: deps
	$(SWIFT) build --product reminders
	$(SWIFT) run --skip-build reminders demo

# Runs every workload through Canopy and through raw LMDB (and GRDB, for the observation comparison) in one run
# (package-benchmark, release build), then prints one line per measure, last:
# `<name> ratio=<canopy/raw> target=<target>` (medians of that run; Benchmarks/ratios.py). A few minutes after the
# first build (which takes about 6).
bench: deps
	@if ! pkg-config --exists sqlite3 2>/dev/null; then \
		echo "SQLite not found by pkg-config: installing libsqlite3-dev with apt-get (GRDB, for one comparison)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libsqlite3-dev >/dev/null; \
	fi
	rm -f Benchmarks/.build/benchmark-results/Current_run.jmh.json "$${TMPDIR:-/tmp}/canopy-bench-view-entry-bytes.txt" \
		"$${TMPDIR:-/tmp}/canopy-bench-long-timings.txt"
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target StoreBenchmarks --no-progress --format jmh \
		--path .build/benchmark-results
	python3 Benchmarks/ratios.py Benchmarks/.build/benchmark-results/Current_run.jmh.json
	@$(MAKE) --no-print-directory bench-xproc

# A writer process commits, an observer process turns each commit into a changeset: latency p50/p99, idle CPU of an
# observer, commit cost of the wake-up (Benchmarks/CrossProcess). About 20 seconds after the build.
bench-xproc: deps
	cd Benchmarks && $(SWIFT) build -c release --product CrossProcessBench && .build/release/CrossProcessBench

# Every DocC catalog rendered to static HTML in .build/docs/site (fails on any DocC warning): Tools/docs/render.sh.
docs: deps
	Tools/docs/render.sh

# The rendered landing pages and one article per catalog, opened in headless chromium (Debian's; installed when
# missing): each shows its title and links to other pages (Tools/docs/check.py).
docs-check: docs
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "chromium not found: installing Debian's chromium with apt-get (headless page checks)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; \
	fi
	python3 Tools/docs/check.py

clean:
	rm -rf .build Benchmarks/.build

# OdinLink top-level Makefile. Targets:
#   make demo      two linked VMs, peer discovered, data moving, results printed
#   make test      unit + sim-test
#   make unit      host unit tests (Check)
#   make sim-test  VM scenarios (TAP)
#   make sim-test-extended  the extended list alone (also in make sim-test)
#   make sim-soak  odl-reload and odl-unplug at their long cycle counts
#   make coverage  lcov line coverage of hw-model/core
#   make bench     benchmarks (results under bench/results/)
#   make deps      install missing Debian packages
#   make qemu      build (or reuse from cache) QEMU with the usb4-nhi device
#   make images    guest kernel + initramfs (cached)
#   make clean
SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := $(TOP)/build
export ODL_CACHE ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/odinlink
KERNEL ?= default

CC ?= gcc
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g

.PHONY: all demo test unit sim-test coverage bench deps qemu images clean
all: unit

deps:
	@bash $(TOP)/ci/deps.sh

# unit tests need Check, lcov and python3 from Debian: install them first
unit coverage: deps

# Check's flags, looked up when a recipe runs (not when make reads this file:
# on a fresh machine `deps` installs Check first); the fallback is what
# Debian's static libcheck needs
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

include $(wildcard $(TOP)/mk/*.mk)

test: unit sim-test

clean:
	rm -rf $(BUILD)

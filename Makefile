# slicelimit: `make` builds, `make test` runs the suite, `make demo` shows it
# working on a veth pair, `make deps` installs what a fresh Debian 12 needs,
# `make install` / `make uninstall` / `make deb`: docs/INSTALL.md.

# SANITIZE=1: userspace built with ASan and UBSan, in its own build dir
ifeq ($(SANITIZE),1)
BUILD      ?= build-san
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD      ?= build
endif
ARCH       := $(shell uname -m)
CLANG      ?= clang
BPFTOOL    ?= bpftool
PROTOC_C   ?= protoc-c
CC         ?= gcc

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

DEB_PACKAGES := clang llvm libbpf-dev bpftool libxdp-dev xdp-tools \
	libelf-dev zlib1g-dev libyaml-dev libjson-c-dev \
	libcmocka-dev pkg-config iproute2 iputils-ping netcat-openbsd \
	python3 gcc make nftables iptables ethtool libclang-rt-14-dev libsodium-dev libmicrohttpd-dev nginx curl wrk \
	libhiredis-dev redis-server groff-base man-db \
	dpkg-dev binutils lintian stunnel4 openssl hping3 python3-scapy \
	libcap-ng-dev systemd libprotobuf-c-dev protobuf-c-compiler libnghttp2-dev \
	python3-grpcio python3-grpc-tools nghttp2-client strace

PKGS       := libbpf libxdp yaml-0.1 json-c libsodium \
	      hiredis libcap-ng libprotobuf-c libnghttp2
CFLAGS     ?= -O2 -g
CFLAGS     += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
	      -Iinclude -Iuser -I$(BUILD) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CFLAGS     += $(SAN_FLAGS)
LDLIBS     += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lelf -lz -lm

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Wall -Wextra -Werror -Wshadow \
	      -Wno-unused-parameter -Iinclude -Ibpf \
	      -I/usr/include/$(ARCH)-linux-gnu

# What `slicelimit version` says: git describe of this tree, and the libxdp
# built against (it has no run-time version call). Only cli.o takes them;
# the stamp rebuilds it when they change. cli/dispatch.c has fallbacks.
SL_VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LIBXDP_VERSION := $(shell pkg-config --modversion libxdp 2>/dev/null)
VERSION_DEFS   := $(if $(SL_VERSION),-DSL_VERSION='"$(SL_VERSION)"') \
		  $(if $(LIBXDP_VERSION),-DSL_LIBXDP_VERSION='"$(LIBXDP_VERSION)"')

BPF_OBJ    := $(BUILD)/slicelimit.bpf.o
SKEL       := $(BUILD)/slicelimit.skel.h
BPF_HDRS   := $(wildcard bpf/*.h) $(wildcard include/*.h include/*/*.h)

# user/ is one folder per role (docs/ARCHITECTURE.md); its includes name
# the folder ("instance/loader.h"), from -Iuser.
USER_SRCS  := $(wildcard user/*/*.c)
USER_HDRS  := $(wildcard user/*/*.h)
# proto/NAME.proto: C made by protoc-c into $(BUILD)/proto/NAME.pb-c.[ch],
# included as "proto/NAME.pb-c.h", linked with the user objects
PROTO_SRCS := $(wildcard proto/*.proto)
PROTO_HDRS := $(patsubst proto/%.proto,$(BUILD)/proto/%.pb-c.h,$(PROTO_SRCS))
PROTO_OBJS := $(patsubst proto/%.proto,$(BUILD)/proto/%.pb-c.o,$(PROTO_SRCS))
USER_OBJS  := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS)) $(PROTO_OBJS)
LIB_OBJS   := $(filter-out $(BUILD)/user/cli/main.o,$(USER_OBJS))

# tests/FOLDER/test_NAME.c, one folder per thing tested (docs/TESTS.md),
# each built into $(BUILD)/tests/test_NAME: no two folders may hold the
# same name.
TEST_SRCS  := $(wildcard tests/*/test_*.c)
TEST_BINS  := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
TEST_SAME  := $(foreach n,$(sort $(notdir $(TEST_SRCS))),\
		$(if $(word 2,$(filter %/$(n),$(TEST_SRCS))),$(filter %/$(n),$(TEST_SRCS))))
ifneq ($(strip $(TEST_SAME)),)
$(error tests share a name (each is the binary $(BUILD)/tests/NAME): $(strip $(TEST_SAME)))
endif

.PHONY: all deps test demo bench bench-cpus bench-profile install uninstall deb clean FORCE
all: $(BUILD)/slicelimit

# $(call apt_install,PACKAGES[,APT-OPTIONS]): apt-get install those not
# installed yet. No service they bring starts: nginx and redis-server are
# tools of the tests, which run their own instances in namespaces, not
# services of this host (nor is prometheus, there for promtool). A
# policy-rc.d answering 101 (action forbidden)
# keeps invoke-rc.d and deb-systemd-invoke from starting them; it is
# written only if the host has none (Docker images do), and removed
# after. On a host booted with systemd the ones this install brought are
# also disabled, so they do not start at the next boot either.
SL_POLICY_RC := /usr/sbin/policy-rc.d
DEPS_SERVICES := nginx redis-server prometheus stunnel4
define apt_install
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ ! -e $(SL_POLICY_RC) ]; then \
			trap 'rm -f $(SL_POLICY_RC)' EXIT; trap 'exit 130' INT TERM; \
			printf '#!/bin/sh\n# make deps (slicelimit): no service starts while it installs\nexit 101\n' \
				>$(SL_POLICY_RC) && chmod 755 $(SL_POLICY_RC); \
		fi; \
		log=$$(mktemp /tmp/slicelimit-deps.XXXXXX); \
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 $(2) $$missing; } >$$log 2>&1; then \
			cat $$log >&2; echo "make deps: apt-get failed (its log is above and in $$log)" >&2; exit 1; \
		fi; \
		rm -f $$log; \
		if [ -d /run/systemd/system ]; then \
			for s in $(DEPS_SERVICES); do \
				case " $$missing " in *" $$s "*) systemctl disable --quiet $$s.service || true ;; esac; \
			done; \
		fi; \
	fi
endef

deps:
	$(call apt_install,$(DEB_PACKAGES))
	$(call apt_install,prometheus,--no-install-recommends)
	@mountpoint -q /sys/fs/bpf || mount -t bpf -o mode=0700 bpf /sys/fs/bpf

$(BUILD) $(BUILD)/tests $(BUILD)/lua:
	$(Q)mkdir -p $@

$(BPF_OBJ): bpf/slicelimit.bpf.c $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(SKEL): $(BPF_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name slicelimit_bpf > $@

$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(BUILD)/proto
	$(Q)$(PROTOC_C) --c_out=$(BUILD)/proto -Iproto $<

# kept: make would delete them as intermediates
.SECONDARY: $(PROTO_HDRS) $(PROTO_OBJS:.o=.c)

$(BUILD)/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(BUILD)/proto -c $< -o $@

$(BUILD)/user/%.o: user/%.c $(SKEL) $(PROTO_HDRS) $(USER_HDRS) $(wildcard include/*.h include/*/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# The Redis scripts (user/*/lua/NAME.lua: the check API's in service/, the
# sync round's in sync/), each built into the binary as the C string
# sl_lua_NAME in $(BUILD)/lua/NAME.lua.h, byte for byte the file (what
# Redis runs and hashes for EVALSHA), so the scripts stay Lua files and the
# service needs no file at run time. NAME is the C name: no two folders
# may hold the same one. The objects of the sources that include one
# (#include "lua/NAME.lua.h") depend on them all, here and under fuzz/.
LUA_SRCS   := $(wildcard user/*/lua/*.lua)
LUA_NAMES  := $(notdir $(LUA_SRCS))
ifneq ($(words $(LUA_NAMES)),$(words $(sort $(LUA_NAMES))))
$(error two Lua scripts share a name (each is the C string sl_lua_NAME): $(sort $(LUA_SRCS)))
endif
LUA_HDRS   := $(patsubst %.lua,$(BUILD)/lua/%.lua.h,$(LUA_NAMES))
LUA_USERS  := $(shell grep -l '^\#include "lua/' $(USER_SRCS))
vpath %.lua $(sort $(dir $(LUA_SRCS)))

$(BUILD)/lua/%.lua.h: %.lua | $(BUILD)/lua
	$(call msg,LUA,$@)
	$(Q){ echo '/* generated from $< by the Makefile: do not edit */'; \
	  echo 'static const char sl_lua_$(subst -,_,$*)[] = {'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0 };'; } >$@.tmp && mv $@.tmp $@

$(patsubst user/%.c,$(BUILD)/user/%.o,$(LUA_USERS)): $(LUA_HDRS)

# Each header's include guard is named for its path, so a moved or renamed
# header cannot keep a stale guard and no two headers (a BPF one and a
# userspace one of the same name) share one: bpf/NAME.h is SL_BPF_NAME_H,
# include/sl_NAME.h is SL_NAME_H (include/NAME.h: SL_NAME_H),
# include/DIR/NAME.h is SL_DIR_NAME_H,
# user/DIR/NAME.h is SL_DIR_NAME_H. The #ifndef and the #define must both
# name it.
GUARD_HDRS := $(BPF_HDRS) $(USER_HDRS)
HASH := \#
GUARD_WRONG := $(shell for f in $(GUARD_HDRS); do \
	n=$$(basename $$f .h); \
	case $$f in \
	(bpf/*) g=SL_BPF_$$n ;; \
	(include/*/*) d=$${f$(HASH)include/}; g=SL_$${d%%/*}_$$n ;; \
	(include/*) g=SL_$${n$(HASH)sl_} ;; \
	(user/*) d=$${f$(HASH)user/}; g=SL_$${d%%/*}_$$n ;; \
	esac; \
	g=$$(echo "$${g}_H" | tr a-z A-Z); \
	grep -qx "$(HASH)ifndef $$g" $$f && grep -qx "$(HASH)define $$g" $$f || echo "$$f:$$g"; \
	done)
ifneq ($(GUARD_WRONG),)
$(error include guard not named for its file (FILE:EXPECTED): $(GUARD_WRONG))
endif

# The layers of user/, lowest first (docs/ARCHITECTURE.md): a folder
# includes only the folders before it in this list, so a lower layer
# never reaches up into one built on it, nor around the check with "../".
# A folder of user/ missing from the list stops the build too, so a new
# one gets a place in it.
USER_LAYERS := util instance state rules sync service replay cli
USER_DIRS   := $(patsubst user/%/,%,$(sort $(dir $(USER_SRCS) $(USER_HDRS))))
ifneq ($(filter-out $(USER_LAYERS),$(USER_DIRS)),)
$(error a folder of user/ is not in USER_LAYERS: $(filter-out $(USER_LAYERS),$(USER_DIRS)))
endif
LAYERS_UP := $(shell set -- $(USER_LAYERS); \
	while [ $$# -gt 1 ]; do \
		d=$$1; shift; up=$$(echo "$$@" | tr ' ' '|'); \
		grep -HnE "^$(HASH)include \"($$up)/" user/$$d/*.[ch] | cut -d: -f1,2; \
	done; \
	grep -HnE "^$(HASH)include \"[^\"]*\.\./" user/*/*.[ch] | cut -d: -f1,2)
ifneq ($(LAYERS_UP),)
$(error an include points up a layer of user/ ($(USER_LAYERS), lowest first): $(LAYERS_UP))
endif

# Under user/ sit include/ (both sides) and bpf/ (the kernel side): an
# #include "NAME" of include/ names a file of include/, and one of bpf/ a
# file of bpf/ or include/ (beside the file or from the folder's root),
# so the shared headers never reach into the program or into user/ (a
# name with ".." in it is refused: it could climb out of the folder).
BPF_INCLUDE_OUT := $(shell for f in $(wildcard include/*.h include/*/*.h bpf/*.[ch] bpf/*/*.[ch]); do \
	case $$f in (include/*) roots=include ;; (*) roots="bpf include" ;; esac; \
	grep -n "^$(HASH)include \"" $$f | while IFS=: read -r n line; do \
		h=$${line$(HASH)*\"}; h=$${h%%\"*}; found=; \
		for r in $$(dirname $$f) $$roots; do [ -f "$$r/$$h" ] && found=1; done; \
		case $$h in (*..*) found= ;; esac; \
		[ -n "$$found" ] || echo "$$f:$$n:$$h"; \
	done; \
	done)
ifneq ($(BPF_INCLUDE_OUT),)
$(error an include of include/ or bpf/ reaches outside (include/ only include/, bpf/ only bpf/ and include/): $(BPF_INCLUDE_OUT))
endif

# Sizes a reader can hold (docs/ARCHITECTURE.md): no source file of bpf/,
# include/ or user/ over 600 lines, no function over 80. A function runs
# from the first line of its declaration (the line after a blank line, a
# closing brace, a comment's end, a preprocessor line or a statement) to
# its closing brace; both braces of a definition stand in column 0, as
# the house style writes them.
SIZE_SRCS := bpf/slicelimit.bpf.c $(BPF_HDRS) $(USER_SRCS) $(USER_HDRS)
SIZE_WRONG := $(shell awk ' \
	FNR == 1 { if (n > 600) print f ":" n "-lines"; b = 0 } \
	/^\{/ { s = b + 1 } \
	/^\}/ && s { if (FNR - s + 1 > 80) print FILENAME ":" s ":function-of-" FNR - s + 1 "-lines"; s = 0 } \
	!s && (/^[ \t]*$$/ || /^\}/ || /\*\/[ \t]*$$/ || /^$(HASH)/ || /;[ \t]*$$/) { b = FNR } \
	{ f = FILENAME; n = FNR } \
	END { if (n > 600) print f ":" n "-lines" } \
	' $(SIZE_SRCS))
ifneq ($(SIZE_WRONG),)
$(error a file over 600 lines or a function over 80 (FILE:LINE:WHAT): $(SIZE_WRONG))
endif

$(BUILD)/version-stamp: FORCE | $(BUILD)
	$(Q)echo '$(VERSION_DEFS)' | cmp -s - $@ || echo '$(VERSION_DEFS)' >$@

$(BUILD)/user/cli/dispatch.o: CFLAGS += $(VERSION_DEFS)
$(BUILD)/user/cli/dispatch.o: $(BUILD)/version-stamp

$(BUILD)/slicelimit: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

TEST_CFLAGS := $(CFLAGS) -Itests/lib

# What tests share, in tests/lib/NAME.c: each test links the fixtures its
# own second line names, "/* fixtures: NAME ... */" ("none": none), and
# only those, since the fixtures of different subjects use the same short
# names (run, begin, fx). A test without the line, or naming a fixture
# that is not there, stops the build.
# $(call test_lib,NAMES): their objects; $(call test_fixtures,SOURCE):
# the names its line gives.
test_lib      = $(patsubst %,$(BUILD)/tests/lib/%.o,$(1))
test_fixtures = $(shell sed -n '2s|^/\* fixtures: \(.*\) \*/$$|\1|p' $(1))

$(BUILD)/tests/lib/%.o: tests/lib/%.c $(SKEL) $(USER_HDRS) $(wildcard include/*.h include/*/*.h tests/lib/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TEST_CFLAGS) -c $< -o $@

# $(call test_rule,SOURCE,FIXTURES): how $(BUILD)/tests/NAME is built
define test_rule
$(if $(2),,$(error $(1): no "/* fixtures: NAME ... */" (or "none") as its second line))
$(foreach f,$(filter-out none,$(2)),$(if $(wildcard tests/lib/$(f).c),,$(error $(1): fixture $(f): no tests/lib/$(f).c)))
$(BUILD)/tests/$(basename $(notdir $(1))): $(1) $(call test_lib,$(filter-out none,$(2))) $(LIB_OBJS) $(SKEL) $(wildcard tests/lib/*.h) | $(BUILD)/tests
	$$(call msg,CC,$$@)
	$$(Q)$$(CC) $$(TEST_CFLAGS) $$< $(call test_lib,$(filter-out none,$(2))) $$(LIB_OBJS) -o $$@ \
		$$(LDLIBS) -lcmocka -lpthread
endef
$(foreach t,$(TEST_SRCS),$(eval $(call test_rule,$(t),$(call test_fixtures,$(t)))))

# counts the calls the user/ objects make (the test's own __wrap_)
$(BUILD)/tests/test_metrics_walk: LDLIBS += -Wl,--wrap=bpf_map_get_next_key
# counts the bpf() calls a check makes (the test's own __wrap_)
$(BUILD)/tests/test_bpf_check_cost: LDLIBS += -Wl,--wrap=bpf_prog_test_run_opts \
	-Wl,--wrap=bpf_map_lookup_elem

NETNS_TOOL := $(BUILD)/tests/sl-traffic

$(NETNS_TOOL): tests/netns/traffic.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -o $@

# tests/netns/test_debian_kernel.sh boots Debian 12's own kernel (6.1) to
# load the object there: the bench-cpus bed's packages.
test: deps
	$(call apt_install,$(BENCH_CPUS_PACKAGES),--no-install-recommends)
	$(Q)$(MAKE) --no-print-directory all $(TEST_BINS) $(NETNS_TOOL) $(FUZZ_BINS) \
		$(BUILD)/bench/bench_xdp
	$(Q)tests/run.sh $(BUILD)

demo: deps
	$(Q)$(MAKE) --no-print-directory all $(NETNS_TOOL)
	$(Q)tests/netns/demo.sh $(BUILD)/slicelimit

# the man pages and the bash completion checked against --help and user/
.PHONY: check-man
check-man: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash tests/netns/test_man.sh $(BUILD)

# bench/bench_http.sh builds bench/http/h2o_hello.c against libh2o-evloop
BENCH_HTTP_PACKAGES := libh2o-evloop-dev

bench: deps
	$(call apt_install,$(BENCH_HTTP_PACKAGES),--no-install-recommends)
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench/bench_xdp $(BUILD)/bench/macro/sl-macro
	$(Q)$(BUILD)/bench/bench_xdp > $(BUILD)/bench/RESULTS-micro.txt || \
		{ echo "bench: bench_xdp failed; bench/RESULTS-micro.txt left as it was" >&2; exit 1; }
	$(Q)cat $(BUILD)/bench/RESULTS-micro.txt && cp $(BUILD)/bench/RESULTS-micro.txt bench/RESULTS-micro.txt
	$(Q)python3 bench/map_lookups.py $(BUILD)/slicelimit.bpf.o
	$(Q)bench/bench_http.sh $(BUILD)
	$(Q)bench/macro/bench_macro.sh $(BUILD)

# Where a packet's nanoseconds go in the 1,000,000-source cases
# (bench/macro/profile.sh): perf stat, perf record -a -g over the softirq
# that runs XDP and the kernel's BPF run-time statistics, for slicelimit
# and the bare counter; writes $(BUILD)/bench/profile/. Debian's linux-perf.
bench-profile: deps
	$(call apt_install,linux-perf,--no-install-recommends)
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench/macro/sl-macro
	$(Q)bench/macro/profile.sh $(BUILD)

# The many-CPU bed (bench/cpus/run.sh): one TCG VM per CPU count, Debian's
# 6.1 kernel, busybox; writes bench/RESULTS-cpus.json and .md. The kernel
# package only adds a boot entry this host does not use; without recommends
# qemu does not pull in a desktop.
BENCH_CPUS_PACKAGES := qemu-system-x86 linux-image-amd64 busybox-static cpio gzip
CPUS       ?= 2 16 64

bench-cpus: deps
	$(call apt_install,$(BENCH_CPUS_PACKAGES),--no-install-recommends)
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench/bench_xdp $(BUILD)/tests/test_bpf_cpus
	$(Q)CPUS="$(CPUS)" bench/cpus/run.sh $(BUILD)

# ---- install: PREFIX (default /usr/local) and DESTDIR, docs/INSTALL.md ----
# The unit is generated from packaging/slicelimit.service.in so its
# ExecStart names the binary this PREFIX installs. The example config and
# rules go to /etc/slicelimit whatever the PREFIX (the unit and the config
# name that path) and never over an existing file: the operator's edits
# stay; uninstall leaves them for the same reason. Man pages and the bash
# completion are installed when packaging/ has them.
PREFIX     ?= /usr/local
SBINDIR    ?= $(PREFIX)/sbin
UNITDIR    ?= $(PREFIX)/lib/systemd/system
DOCDIR     ?= $(PREFIX)/share/doc/slicelimit
MANDIR     ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
CONFDIR    := /etc/slicelimit
MAN_PAGES  := $(wildcard packaging/man/*.[58])
BASH_COMP  := $(wildcard packaging/bash-completion/slicelimit)
# $(call man_dest,SHELL-VAR): packaging/man/NAME.N -> MANDIR/manN/NAME.N
man_dest    = $(DESTDIR)$(MANDIR)/man$${$(1)\#\#*.}/$${$(1)\#\#*/}

install: all
	install -D -m 755 $(BUILD)/slicelimit $(DESTDIR)$(SBINDIR)/slicelimit
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|@SBINDIR@|$(SBINDIR)|g' packaging/slicelimit.service.in >$(DESTDIR)$(UNITDIR)/slicelimit.service
	chmod 644 $(DESTDIR)$(UNITDIR)/slicelimit.service
	install -d -m 755 $(DESTDIR)$(CONFDIR)
	[ -e $(DESTDIR)$(CONFDIR)/config.yaml ] || install -m 644 packaging/config.yaml $(DESTDIR)$(CONFDIR)/config.yaml
	[ -e $(DESTDIR)$(CONFDIR)/rules.yaml ] || install -m 644 packaging/rules.yaml $(DESTDIR)$(CONFDIR)/rules.yaml
	install -D -m 644 packaging/nginx-slicelimit.conf $(DESTDIR)$(DOCDIR)/examples/nginx-slicelimit.conf
	install -D -m 644 packaging/prometheus/slicelimit-alerts.yml $(DESTDIR)$(DOCDIR)/examples/slicelimit-alerts.yml
	install -D -m 644 packaging/grafana/slicelimit-dashboard.json $(DESTDIR)$(DOCDIR)/examples/slicelimit-dashboard.json
	install -D -m 644 LICENSE $(DESTDIR)$(DOCDIR)/LICENSE
	install -D -m 644 -t $(DESTDIR)$(DOCDIR)/LICENSES LICENSES/*.txt
	for m in $(MAN_PAGES); do install -D -m 644 $$m $(call man_dest,m); done
	for c in $(BASH_COMP); do install -D -m 644 $$c $(DESTDIR)$(BASHCOMPDIR)/slicelimit; done

# What install put, but not /etc/slicelimit: the config the operator may
# have edited (remove it by hand). Stop and disable the service first.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/slicelimit $(DESTDIR)$(UNITDIR)/slicelimit.service
	rm -f $(DESTDIR)$(DOCDIR)/examples/nginx-slicelimit.conf $(DESTDIR)$(DOCDIR)/LICENSE \
		$(DESTDIR)$(DOCDIR)/examples/slicelimit-alerts.yml \
		$(DESTDIR)$(DOCDIR)/examples/slicelimit-dashboard.json \
		$(addprefix $(DESTDIR)$(DOCDIR)/LICENSES/,$(notdir $(wildcard LICENSES/*.txt)))
	for m in $(MAN_PAGES); do rm -f $(call man_dest,m); done
	rm -f $(DESTDIR)$(BASHCOMPDIR)/slicelimit
	-rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR)/LICENSES $(DESTDIR)$(DOCDIR) 2>/dev/null
	@echo "kept $(DESTDIR)$(CONFDIR) (your config and rules): remove it by hand if you want it gone"

# ---- make deb: BUILD/slicelimit_VERSION_ARCH.deb (docs/INSTALL.md) ----
# `make install PREFIX=/usr` into a staging root, then what Debian asks of
# a binary package on top: a stripped binary, gzipped man pages, the
# copyright file in place of LICENSE, changelog.Debian.gz, md5sums, the
# /etc files as conffiles, and Depends from dpkg-shlibdeps (the libraries
# the binary links: libbpf1, libxdp1, libyaml-0-2, libjson-c5, libsodium23,
# libhiredis0.14, libc6; libelf1 and zlib1g come with
# libbpf1). The version is git describe's made a Debian one: tag v1.2,
# 3 commits on: 1.2+3+g<hash>-1; no tag yet: 0~git<hash>-1.
DEB_VERSION    ?= $(shell echo '$(or $(SL_VERSION),unknown)' | \
		    sed -e 's/^v\([0-9]\)/\1/' -e '/^[0-9][0-9]*\./!s/^/0~git/' \
			-e 's/-/+/g' -e 's/$$/-1/')
DEB_ARCH       ?= $(shell dpkg --print-architecture 2>/dev/null)
DEB_MAINTAINER ?= $(shell git log -1 --format='%an <%ae>' 2>/dev/null)
DEB_STAGE      := $(BUILD)/deb/root
DEB_FILE       := $(BUILD)/slicelimit_$(DEB_VERSION)_$(DEB_ARCH).deb

deb: all
	$(call msg,DEB,$(DEB_FILE))
	$(Q)rm -rf $(BUILD)/deb $(BUILD)/slicelimit_*.deb
	$(Q)$(MAKE) --no-print-directory -s install DESTDIR=$(abspath $(DEB_STAGE)) PREFIX=/usr
	$(Q)strip --remove-section=.comment --remove-section=.note --strip-unneeded \
		$(DEB_STAGE)/usr/sbin/slicelimit
	$(Q)[ ! -d $(DEB_STAGE)/usr/share/man ] || find $(DEB_STAGE)/usr/share/man -type f -exec gzip -9n {} +
	$(Q)d=$(DEB_STAGE)/usr/share/doc/slicelimit; rm -rf $$d/LICENSE $$d/LICENSES && \
		install -m 644 packaging/deb/copyright $$d/copyright && \
		{ printf 'slicelimit (%s) unstable; urgency=medium\n\n' '$(DEB_VERSION)'; \
		  printf '  * Built from git %s (make deb).\n\n' '$(or $(SL_VERSION),unknown)'; \
		  printf ' -- %s  %s\n' '$(DEB_MAINTAINER)' \
			"$$(date -R -u -d @$$(git log -1 --format=%ct 2>/dev/null || date +%s))"; \
		} | gzip -9n >$$d/changelog.Debian.gz && chmod 644 $$d/changelog.Debian.gz
	$(Q)install -d $(DEB_STAGE)/DEBIAN
	$(Q)install -m 755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm $(DEB_STAGE)/DEBIAN/
	$(Q)(cd $(DEB_STAGE) && find etc -type f -printf '/%p\n' | sort) >$(DEB_STAGE)/DEBIAN/conffiles
	$(Q)(cd $(DEB_STAGE) && find usr -type f -print0 | sort -z | xargs -0 md5sum) >$(DEB_STAGE)/DEBIAN/md5sums
	$(Q)mkdir -p $(BUILD)/deb/shlibs/debian && \
		printf 'Source: slicelimit\n\nPackage: slicelimit\nArchitecture: any\n' \
			>$(BUILD)/deb/shlibs/debian/control && \
		deps=$$(cd $(BUILD)/deb/shlibs && dpkg-shlibdeps -O \
			-e$(abspath $(DEB_STAGE))/usr/sbin/slicelimit | sed -n 's/^shlibs:Depends=//p') && \
		[ -n "$$deps" ] && \
		sed -e 's|@VERSION@|$(DEB_VERSION)|' -e 's|@ARCH@|$(DEB_ARCH)|' \
		    -e 's|@MAINTAINER@|$(DEB_MAINTAINER)|' -e "s|@DEPENDS@|$$deps|" \
		    -e "s|@SIZE@|$$(du -sk --exclude=DEBIAN $(DEB_STAGE) | cut -f1)|" \
		    packaging/deb/control.in >$(DEB_STAGE)/DEBIAN/control
	$(Q)dpkg-deb --root-owner-group -Zxz --build $(DEB_STAGE) $(DEB_FILE) >/dev/null

clean:
	$(Q)rm -rf $(BUILD)

# ---- benchmarks ----
$(BUILD)/bench:
	$(Q)mkdir -p $@

$(BUILD)/bench/floor.bpf.o: bench/floor.bpf.c | $(BUILD)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/floor.skel.h: $(BUILD)/bench/floor.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name floor_bpf > $@

$(BUILD)/bench/macro:
	$(Q)mkdir -p $@

$(BUILD)/bench/macro/gen.bpf.o: bench/macro/gen.bpf.c | $(BUILD)/bench/macro
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/macro/gen.skel.h: $(BUILD)/bench/macro/gen.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name gen_bpf > $@

$(BUILD)/bench/macro/sl-macro: bench/macro/macro.c $(BUILD)/bench/macro/gen.skel.h $(BUILD)/bench/floor.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(BUILD)/bench -I$(BUILD)/bench/macro $< -o $@ $(LDLIBS) -lpthread

$(BUILD)/bench/bench_xdp: bench/bench_xdp.c $(BUILD)/bench/floor.skel.h $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(BUILD)/bench $< $(LIB_OBJS) -o $@ $(LDLIBS)

# ---- fuzzing: clang libFuzzer targets in tests/fuzz (make fuzz) ----
# The userspace objects are rebuilt with clang and coverage instrumentation
# in their own directory: the gcc-built ones in $(BUILD)/user are not.
FUZZ_CC      ?= clang
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS  := -O1 -g -std=gnu11 -Wall -Wno-unused-parameter -Iinclude -Iuser \
		-I$(BUILD) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
		-fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer
FUZZ_OBJS    := $(patsubst user/%.c,$(FUZZ_DIR)/obj/%.o,$(filter-out user/cli/main.c,$(USER_SRCS))) \
		$(patsubst proto/%.proto,$(FUZZ_DIR)/obj/proto/%.pb-c.o,$(PROTO_SRCS))
FUZZ_BINS    := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))

$(FUZZ_DIR)/obj/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(BUILD)/proto -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/obj/%.o: user/%.c $(SKEL) $(PROTO_HDRS) $(USER_HDRS) $(wildcard include/*.h include/*/*.h)
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) -o $@ $(LDLIBS)

$(patsubst user/%.c,$(FUZZ_DIR)/obj/%.o,$(LUA_USERS)): $(LUA_HDRS)

# make deletes intermediates after each link otherwise
.SECONDARY: $(FUZZ_OBJS)
.PHONY: fuzz
fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS)
	$(Q)tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

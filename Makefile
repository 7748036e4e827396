# slicelimit: `make` builds, `make test` runs the suite, `make demo` shows it
# working on a veth pair, `make deps` installs what a fresh Debian 12 needs.

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
	libhiredis-dev redis-server stunnel4 openssl

PKGS       := libbpf libxdp yaml-0.1 json-c libsodium libmicrohttpd \
	      hiredis
CFLAGS     ?= -O2 -g
CFLAGS     += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
	      -Iinclude -I$(BUILD) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CFLAGS     += $(SAN_FLAGS)
LDLIBS     += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lelf -lz -lm

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Wall -Werror -Iinclude -Ibpf \
	      -I/usr/include/$(ARCH)-linux-gnu

# What `slicelimit version` says: git describe of this tree, and the libxdp
# built against (it has no run-time version call). Only cli.o takes them;
# the stamp rebuilds it when they change. cli.c has fallbacks.
SL_VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LIBXDP_VERSION := $(shell pkg-config --modversion libxdp 2>/dev/null)
VERSION_DEFS   := $(if $(SL_VERSION),-DSL_VERSION='"$(SL_VERSION)"') \
		  $(if $(LIBXDP_VERSION),-DSL_LIBXDP_VERSION='"$(LIBXDP_VERSION)"')

BPF_OBJ    := $(BUILD)/slicelimit.bpf.o
SKEL       := $(BUILD)/slicelimit.skel.h
BPF_HDRS   := $(wildcard bpf/*.h) $(wildcard include/*.h)

USER_SRCS  := $(wildcard user/*.c)
USER_OBJS  := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS))
LIB_OBJS   := $(filter-out $(BUILD)/user/main.o,$(USER_OBJS))

TEST_BINS  := $(patsubst %.c,$(BUILD)/tests/%,\
		$(notdir $(wildcard tests/unit/test_*.c tests/bpf/test_*.c)))

.PHONY: all deps test demo bench bench-cpus install clean FORCE
all: $(BUILD)/slicelimit

# $(call apt_install,PACKAGES): apt-get install those not installed yet
define apt_install
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) $$missing; \
	fi
endef

deps:
	$(call apt_install,$(DEB_PACKAGES))
	@mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

$(BUILD) $(BUILD)/user $(BUILD)/tests $(BUILD)/lua:
	$(Q)mkdir -p $@

$(BPF_OBJ): bpf/slicelimit.bpf.c $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(SKEL): $(BPF_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name slicelimit_bpf > $@

$(BUILD)/user/%.o: user/%.c $(SKEL) $(wildcard user/*.h) $(wildcard include/*.h) | $(BUILD)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# The check API's Lua scripts (user/lua/NAME.lua), each built into the
# binary as the C string sl_lua_NAME in $(BUILD)/lua/NAME.lua.h, so the
# scripts stay Lua files and the service needs no file at run time.
LUA_SRCS   := $(wildcard user/lua/*.lua)
LUA_HDRS   := $(patsubst user/lua/%.lua,$(BUILD)/lua/%.lua.h,$(LUA_SRCS))

$(BUILD)/lua/%.lua.h: user/lua/%.lua | $(BUILD)/lua
	$(call msg,LUA,$@)
	$(Q){ echo '/* generated from $< by the Makefile: do not edit */'; \
	  echo 'static const char sl_lua_$(subst -,_,$*)[] = {'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0 };'; } >$@.tmp && mv $@.tmp $@

$(BUILD)/user/check_central.o: $(LUA_HDRS)

$(BUILD)/version-stamp: FORCE | $(BUILD)
	$(Q)echo '$(VERSION_DEFS)' | cmp -s - $@ || echo '$(VERSION_DEFS)' >$@

$(BUILD)/user/cli.o: CFLAGS += $(VERSION_DEFS)
$(BUILD)/user/cli.o: $(BUILD)/version-stamp

$(BUILD)/slicelimit: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

TEST_CFLAGS := $(CFLAGS) -Iuser -Itests/lib

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) $(wildcard tests/lib/*.h) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< $(LIB_OBJS) -o $@ $(LDLIBS) -lcmocka -lpthread

$(BUILD)/tests/test_%: tests/bpf/test_%.c $(LIB_OBJS) $(SKEL) $(wildcard tests/lib/*.h) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< $(LIB_OBJS) -o $@ $(LDLIBS) -lcmocka -lpthread

NETNS_TOOL := $(BUILD)/tests/sl-traffic

$(NETNS_TOOL): tests/netns/traffic.c | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -o $@

test: deps
	$(Q)$(MAKE) --no-print-directory all $(TEST_BINS) $(NETNS_TOOL) $(FUZZ_BINS)
	$(Q)tests/run.sh $(BUILD)

demo: deps
	$(Q)$(MAKE) --no-print-directory all $(NETNS_TOOL)
	$(Q)tests/netns/demo.sh $(BUILD)/slicelimit

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench/bench_xdp $(BUILD)/bench/macro/sl-macro
	$(Q)$(BUILD)/bench/bench_xdp | tee bench/RESULTS-micro.txt
	$(Q)bench/bench_http.sh $(BUILD)
	$(Q)bench/macro/bench_macro.sh $(BUILD)

# The many-CPU bed (bench/cpus/run.sh): one TCG VM per CPU count, Debian's
# 6.1 kernel, busybox; writes bench/RESULTS-cpus.json and .md. The kernel
# package only adds a boot entry this host does not use; without recommends
# qemu does not pull in a desktop.
BENCH_CPUS_PACKAGES := qemu-system-x86 linux-image-amd64 busybox-static cpio gzip
CPUS       ?= 2 16 64

bench-cpus: deps
	$(call apt_install,$(BENCH_CPUS_PACKAGES),--no-install-recommends)
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench/bench_xdp $(BUILD)/tests/test_bpf
	$(Q)CPUS="$(CPUS)" bench/cpus/run.sh $(BUILD)

PREFIX ?= /usr/local
install: all
	install -D -m 755 $(BUILD)/slicelimit $(DESTDIR)$(PREFIX)/sbin/slicelimit
	install -D -m 644 packaging/slicelimit.service $(DESTDIR)/etc/systemd/system/slicelimit.service
	[ -e $(DESTDIR)/etc/slicelimit/config.yaml ] || install -D -m 644 packaging/config.yaml $(DESTDIR)/etc/slicelimit/config.yaml
	[ -e $(DESTDIR)/etc/slicelimit/rules.yaml ] || install -D -m 644 packaging/rules.yaml $(DESTDIR)/etc/slicelimit/rules.yaml

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
	$(Q)$(CC) $(CFLAGS) -Iuser -I$(BUILD)/bench $< $(LIB_OBJS) -o $@ $(LDLIBS)

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
FUZZ_OBJS    := $(patsubst user/%.c,$(FUZZ_DIR)/obj/%.o,$(filter-out user/main.c,$(USER_SRCS)))
FUZZ_BINS    := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))

$(FUZZ_DIR)/obj:
	$(Q)mkdir -p $@

$(FUZZ_DIR)/obj/%.o: user/%.c $(SKEL) $(wildcard user/*.h) $(wildcard include/*.h) | $(FUZZ_DIR)/obj
	$(call msg,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) -o $@ $(LDLIBS)

$(FUZZ_DIR)/obj/check_central.o: $(LUA_HDRS)

# make deletes intermediates after each link otherwise
.SECONDARY: $(FUZZ_OBJS)
.PHONY: fuzz
fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS)
	$(Q)tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

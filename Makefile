# oomdoc - plain GNU Makefile.
#   make          build ./oomdoc and build/rel/liboomdoc.a
#   make demo     build, then run the main job on the bundled real snapshot
#   make test     unit + golden CLI tests + fuzz corpus replay + cross-checks, then all of
#                 it again under ASan+UBSan (make asan)
#   make fuzz     libFuzzer targets (clang), make bench: benchmarks against baselines

CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
DEFS    := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
LIBS    := -ljansson -lz -lm -ldl -pthread
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

BUILD   ?= build/rel
LIB_SRC := $(sort $(wildcard lib/*.c))
CLI_SRC := $(sort $(wildcard cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_REPLAY := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/%_replay)
ALL_CFLAGS = $(WARN) $(DEFS) $(CFLAGS) $(EXTRA_CFLAGS) -MMD -MP

.PHONY: all deps deps-test demo test check asan fuzz bench clean
all: oomdoc

deps:
	@sh tools/deps.sh build
deps-test:
	@sh tools/deps.sh test

oomdoc: $(BUILD)/oomdoc
	cp $< $@

$(BUILD)/liboomdoc.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/oomdoc: $(CLI_OBJ) $(BUILD)/liboomdoc.a
	$(CC) $(ALL_CFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/liboomdoc.a $(LIBS)

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The pickle reader's threaded dispatch needs each handler to keep its own indirect jump;
# GCC merges them unless told not to. Compilers without these flags (clang) do not get them.
THREADED_FLAGS := $(shell $(CC) -Werror -fno-gcse -fno-crossjumping -x c -c -o /dev/null /dev/null 2>/dev/null && echo -fno-gcse -fno-crossjumping)
$(BUILD)/lib/pickle.o: ALL_CFLAGS += $(THREADED_FLAGS)

# The pickle tests again with the reader's plain switch dispatch (what compilers without
# computed goto get), so that path is built and checked too.
$(BUILD)/tests/test_pickle_switch: tests/unit/test_pickle.c lib/pickle.c $(BUILD)/liboomdoc.a | deps-test
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DOD_THREADED=0 -Ilib -o $@ tests/unit/test_pickle.c lib/pickle.c $(BUILD)/liboomdoc.a -lcmocka $(LIBS)

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/liboomdoc.a | deps-test
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Ilib -o $@ $< $(BUILD)/liboomdoc.a -lcmocka $(LIBS)

# Fuzz targets built as plain programs that replay a corpus (no fuzzer needed).
$(BUILD)/tests/fuzz_%_replay: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c $(BUILD)/liboomdoc.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Ilib -o $@ $< tests/fuzz/replay_main.c $(BUILD)/liboomdoc.a $(LIBS)

# The main job on a real run that died with CUDA OOM: its snapshot and its error message.
demo: oomdoc
	./oomdoc doctor examples/snap_train_oom.pickle examples/snap_train_oom.log

# The whole suite for one build (BUILD, EXTRA_CFLAGS select the variant).
check: $(BUILD)/oomdoc $(UNIT_BIN) $(BUILD)/tests/test_pickle_switch $(FUZZ_REPLAY) | deps-test
	@sh tests/run_all.sh $(BUILD)

test: oomdoc
	@$(MAKE) --no-print-directory check BUILD=build/rel
	@$(MAKE) --no-print-directory asan

asan:
	@$(MAKE) --no-print-directory check BUILD=build/asan OPT=-O1 EXTRA_CFLAGS="$(SAN)"

# libFuzzer builds (clang): run e.g. build/fuzz/fuzz_pickle tests/fuzz/corpus/pickle
fuzz: $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
build/fuzz/%: tests/fuzz/%.c $(LIB_SRC)
	@mkdir -p $(@D)
	clang $(WARN) $(DEFS) -O1 -g -fsanitize=fuzzer,address,undefined -Ilib -o $@ $< $(LIB_SRC) $(LIBS)

bench: oomdoc
	@sh bench/run.sh

clean:
	rm -rf build oomdoc

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

# ---------------------------------------------------------------------------------------
# Test-only: fake libnvidia-ml.so.1 that plays back a script (tests/fakenvml/script.h),
# built twice (a current driver's API and an old one's), so that NVML code is tested on a
# machine without a GPU. `check` builds them; tests select them with --nvml-lib or
# OOMDOC_NVML_LIB.
FAKENVML_SRC := tests/fakenvml/fakenvml.c tests/fakenvml/script.c
FAKENVML_LIBS := $(BUILD)/tests/fakenvml/libnvidia-ml.so.1 $(BUILD)/tests/fakenvml-old/libnvidia-ml.so.1
$(BUILD)/tests/fakenvml/libnvidia-ml.so.1: $(FAKENVML_SRC) tests/fakenvml/script.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) $(EXTRA_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ $(FAKENVML_SRC) -lm
$(BUILD)/tests/fakenvml-old/libnvidia-ml.so.1: $(FAKENVML_SRC) tests/fakenvml/script.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) $(EXTRA_CFLAGS) -DFAKE_OLD_DRIVER -fPIC -shared -fvisibility=hidden -o $@ $(FAKENVML_SRC) -lm
check: $(FAKENVML_LIBS)

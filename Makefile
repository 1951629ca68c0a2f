# oomdoc - plain GNU Makefile.
#   make          build ./oomdoc, build/rel/liboomdoc.a and build/rel/liboomdoc.so
#   make install  PREFIX=/usr/local DESTDIR=: binary, libraries, headers, oomdoc.pc, man
#                 pages, bash completion, the Python package; make uninstall removes them
#   make demo     build, then run the main job on the bundled real snapshot
#   make test     unit + golden CLI tests + fuzz corpus replay + cross-checks, then all of
#                 it again under ASan+UBSan (make asan), then the unit, golden and fuzz
#                 corpus tests under clang's sanitizers (make clang-san)
#   make fuzz     libFuzzer targets (clang), make bench: benchmarks against baselines

CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
DEFS    := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
LIBS    := -ljansson -lz -lm -ldl -pthread
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

BUILD   ?= build/rel
LIB_SRC := $(sort $(wildcard lib/*/*.c lib/*/*/*.c))
CLI_SRC := $(sort $(wildcard cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_REPLAY := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/%_replay)
GEN     := build/gen
INCS    := -Iinclude -Ilib -I$(GEN)
ALL_CFLAGS = $(WARN) $(DEFS) $(INCS) $(CFLAGS) $(EXTRA_CFLAGS) -MMD -MP

.PHONY: all deps deps-test demo test check asan fuzz bench clean install uninstall golden golden-update
all: oomdoc shlib

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

# The report page's stylesheet and script are files (lib/render/report.css, report_util.js,
# report.js), embedded as C strings at build time; every build variant shares the header.
REPORT_ASSETS := lib/render/report.css lib/render/report_util.js lib/render/report.js
$(GEN)/render/report_assets.h: tools/embed.sh $(REPORT_ASSETS)
	@mkdir -p $(@D)
	sh tools/embed.sh $@ OD_REPORT_CSS=lib/render/report.css OD_REPORT_JS=lib/render/report_util.js+lib/render/report.js
$(BUILD)/lib/render/report.o $(BUILD)/pic/lib/render/report.o: $(GEN)/render/report_assets.h

# The pickle reader's threaded dispatch needs each handler to keep its own indirect jump;
# GCC merges them unless told not to. Compilers without these flags (clang) do not get them.
THREADED_FLAGS := $(shell $(CC) -Werror -fno-gcse -fno-crossjumping -x c -c -o /dev/null /dev/null 2>/dev/null && echo -fno-gcse -fno-crossjumping)
$(BUILD)/lib/read/pickle.o: ALL_CFLAGS += $(THREADED_FLAGS)

# The pickle tests again with the reader's plain switch dispatch (what compilers without
# computed goto get), so that path is built and checked too.
$(BUILD)/tests/test_pickle_switch: tests/unit/test_pickle.c lib/read/pickle.c $(BUILD)/liboomdoc.a | deps-test
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DOD_THREADED=0 -o $@ tests/unit/test_pickle.c lib/read/pickle.c $(BUILD)/liboomdoc.a -lcmocka $(LIBS)

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/liboomdoc.a | deps-test
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/liboomdoc.a -lcmocka $(LIBS)

# Fuzz targets built as plain programs that replay a corpus (no fuzzer needed).
$(BUILD)/tests/fuzz_%_replay: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c $(BUILD)/liboomdoc.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< tests/fuzz/replay_main.c $(BUILD)/liboomdoc.a $(LIBS)

# The main job on a real run that died with CUDA OOM: its snapshot and its error message.
demo: oomdoc
	./oomdoc doctor examples/snap_train_oom.pickle examples/snap_train_oom.log

# The whole suite for one build (BUILD, EXTRA_CFLAGS select the variant).
check: $(BUILD)/oomdoc $(UNIT_BIN) $(BUILD)/tests/test_pickle_switch $(FUZZ_REPLAY) | deps-test
	@sh tests/run_all.sh $(BUILD) $(if $(EXTRA_CFLAGS),--sanitized)

test: oomdoc
	@$(MAKE) --no-print-directory check BUILD=build/rel
	@$(MAKE) --no-print-directory asan
	@$(MAKE) --no-print-directory clang-san

asan:
	@$(MAKE) --no-print-directory check BUILD=build/asan OPT=-O1 EXTRA_CFLAGS="$(SAN)"

# clang's UBSan catches what gcc's lets through (qsort(NULL, 0), NULL + 0, a float cast
# out of an integer's range); the fuzzers use the same setting. A third whole suite would
# make `make test` too slow: this build runs what reaches the library (tests/run_all.sh --library-only).
CLANG_SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
.PHONY: clang-san sanitized-check
clang-san:
	@$(MAKE) --no-print-directory sanitized-check BUILD=build/clang CC=clang OPT=-O1 EXTRA_CFLAGS="$(CLANG_SAN)"
sanitized-check: $(BUILD)/oomdoc $(UNIT_BIN) $(BUILD)/tests/test_pickle_switch $(FUZZ_REPLAY) | deps-test
	@sh tests/run_all.sh $(BUILD) --library-only

# libFuzzer builds (clang): run e.g. build/fuzz/fuzz_pickle tests/fuzz/corpus/pickle
fuzz: $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
build/fuzz/%: tests/fuzz/%.c $(LIB_SRC) $(GEN)/render/report_assets.h
	@mkdir -p $(@D)
	clang $(WARN) $(DEFS) -O1 -g -fsanitize=fuzzer,address,undefined,float-cast-overflow -fno-sanitize-recover=all $(INCS) -o $@ $< $(LIB_SRC) $(LIBS)

# Golden CLI tests alone: make golden, make golden CASE=doctor/frag_default (a shell
# pattern under tests/golden: CASE='triage/real_*', CASE=plan). make golden-update CASE=...
# rewrites the expected output of the cases that differ; review it with git diff.
CASE ?=
golden: oomdoc $(FAKENVML_LIBS)
	@sh tests/golden/run.sh $(BUILD)/oomdoc $(CASE)
golden-update: oomdoc $(FAKENVML_LIBS)
	@OOMDOC_GOLDEN_UPDATE=1 sh tests/golden/run.sh $(BUILD)/oomdoc $(CASE)

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
sanitized-check: $(FAKENVML_LIBS)

# ---------------------------------------------------------------------------------------
# Shared library and install (GNU conventions: PREFIX, DESTDIR, bindir, libdir, ...).
# liboomdoc.so holds the library and the subcommands (built -fPIC in $(BUILD)/pic) plus
# od_cli_run_capture (cli/capture.c), which the Python package calls through ctypes. The
# binary links liboomdoc.a statically, so the installed one needs no LD_LIBRARY_PATH.
VERSION   := $(shell sed -n 's/^\#define OD_VERSION "\(.*\)"/\1/p' include/oomdoc/od.h)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))
SONAME    := liboomdoc.so.$(SOVERSION)
SHLIB     := $(BUILD)/liboomdoc.so.$(VERSION)
PIC_OBJ   := $(LIB_SRC:%.c=$(BUILD)/pic/%.o) $(filter-out $(BUILD)/pic/cli/main.o,$(CLI_SRC:%.c=$(BUILD)/pic/%.o))

.PHONY: shlib
shlib: $(BUILD)/liboomdoc.so

# It exports only the public API: its objects are compiled -fvisibility=hidden and the
# declarations in include/oomdoc/ that callers may use carry OD_API (tests/suites/exports.sh
# lists the exports). The Python wheel (python/_oomdoc_build.py) runs `make python-native
# BUNDLED=1`, which compiles each file once (PIC) and links the library and a binary from
# those objects, each looking beside itself first ($$ORIGIN) for the libjansson.so.4 and
# libz.so.1 the wheel carries (Debian's libjansson.a is not PIC: it cannot be linked in).
comma := ,
SHLIB_LIBS := $(if $(BUNDLED),-Wl$(comma)-rpath$(comma)'$$ORIGIN' -Wl$(comma)--enable-new-dtags) $(LIBS)

$(BUILD)/pic/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<
$(BUILD)/pic/lib/read/pickle.o: ALL_CFLAGS += $(THREADED_FLAGS)

$(SHLIB): $(PIC_OBJ)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,$(SONAME) -o $@ $(PIC_OBJ) $(SHLIB_LIBS)

.PHONY: python-native
python-native: $(BUILD)/liboomdoc.so $(BUILD)/pic/oomdoc
$(BUILD)/pic/oomdoc: $(BUILD)/pic/cli/main.o $(PIC_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(SHLIB_LIBS)
$(BUILD)/pic/cli/main.o: ALL_CFLAGS += $(RELEASE_DEFS)
$(BUILD)/liboomdoc.so: $(SHLIB)
	ln -sf $(notdir $(SHLIB)) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

-include $(PIC_OBJ:.o=.d)

# Asserts state invariants in the sanitizer builds (EXTRA_CFLAGS set) and are compiled out
# of the release library, binary and shared library (as SQLite's release builds do), so a
# failed invariant can never abort the Python process that loaded liboomdoc.so. The tests'
# own code keeps assert() whatever the build.
RELEASE_DEFS := $(if $(EXTRA_CFLAGS),,-DNDEBUG)
$(LIB_OBJ) $(CLI_OBJ) $(PIC_OBJ): ALL_CFLAGS += $(RELEASE_DEFS)

# The Python suites load the library of the build they test; a sanitizer build's cannot be
# loaded into python, so only plain builds make one for check.
check: $(if $(EXTRA_CFLAGS),,$(BUILD)/liboomdoc.so)

PREFIX      ?= /usr/local
exec_prefix ?= $(PREFIX)
bindir      ?= $(exec_prefix)/bin
libdir      ?= $(exec_prefix)/lib
includedir  ?= $(PREFIX)/include
datarootdir ?= $(PREFIX)/share
mandir      ?= $(datarootdir)/man
man1dir     ?= $(mandir)/man1
bashcompdir ?= $(datarootdir)/bash-completion/completions
pkgconfigdir ?= $(libdir)/pkgconfig
PYTHON      ?= python3
# The Python package goes where the python3 it serves reads packages: that python's site
# directory under PREFIX (a venv's, pyenv's or conda's prefix; /usr/local for Debian's
# python3; ~/.local for the user site), else PREFIX/lib/pythonX.Y/site-packages, and then
# install prints the PYTHONPATH= line to use. (pip install . is the other way: a wheel.)
pythondir   ?= $(shell $(PYTHON) python/_oomdoc_build.py pythondir $(PREFIX))
INSTALL     ?= install
PUBLIC_H    := $(sort $(wildcard include/oomdoc/*.h))
PY_SRC      := $(sort $(wildcard python/oomdoc/*.py))
MAN_PAGES   := $(sort $(wildcard man/*.1))

# Written at every install: it records PREFIX and the directories, which may change
# between two installs of the same build.
.PHONY: $(BUILD)/oomdoc.pc
$(BUILD)/oomdoc.pc:
	@mkdir -p $(@D)
	printf '%s\n' 'prefix=$(PREFIX)' 'exec_prefix=$(exec_prefix)' 'libdir=$(libdir)' \
	    'includedir=$(includedir)' '' 'Name: oomdoc' \
	    'Description: diagnose and prevent GPU out-of-memory failures (PyTorch snapshots, logs, plans)' \
	    'Version: $(VERSION)' 'Requires.private: jansson zlib' \
	    'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -loomdoc' \
	    'Libs.private: -lm -ldl -pthread' > $@

install: oomdoc shlib $(BUILD)/oomdoc.pc
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir) $(DESTDIR)$(pkgconfigdir) \
	    $(DESTDIR)$(includedir)/oomdoc $(DESTDIR)$(man1dir) $(DESTDIR)$(bashcompdir) \
	    $(DESTDIR)$(pythondir)/oomdoc
	$(INSTALL) -m 755 $(BUILD)/oomdoc $(DESTDIR)$(bindir)/oomdoc
	$(INSTALL) -m 755 $(SHLIB) $(DESTDIR)$(libdir)/$(notdir $(SHLIB))
	ln -sf $(notdir $(SHLIB)) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(libdir)/liboomdoc.so
	$(INSTALL) -m 644 $(BUILD)/liboomdoc.a $(DESTDIR)$(libdir)/liboomdoc.a
	$(INSTALL) -m 644 $(BUILD)/oomdoc.pc $(DESTDIR)$(pkgconfigdir)/oomdoc.pc
	$(INSTALL) -m 644 $(PUBLIC_H) $(DESTDIR)$(includedir)/oomdoc/
	$(INSTALL) -m 644 $(MAN_PAGES) $(DESTDIR)$(man1dir)/
	$(INSTALL) -m 644 completion/oomdoc.bash $(DESTDIR)$(bashcompdir)/oomdoc
	$(INSTALL) -m 644 $(PY_SRC) python/oomdoc/py.typed $(DESTDIR)$(pythondir)/oomdoc/
	printf 'LIBDIR = %s\nBINDIR = %s\n' \
	    "'$$($(PYTHON) -c 'import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' $(libdir) $(pythondir)/oomdoc)'" \
	    "'$$($(PYTHON) -c 'import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' $(bindir) $(pythondir)/oomdoc)'" \
	    > $(DESTDIR)$(pythondir)/oomdoc/_installed.py
	@$(PYTHON) python/_oomdoc_build.py pythonpath-note $(pythondir)

uninstall:
	rm -f $(DESTDIR)$(bindir)/oomdoc
	rm -f $(DESTDIR)$(libdir)/liboomdoc.so $(DESTDIR)$(libdir)/$(SONAME) \
	    $(DESTDIR)$(libdir)/$(notdir $(SHLIB)) $(DESTDIR)$(libdir)/liboomdoc.a
	rm -f $(DESTDIR)$(pkgconfigdir)/oomdoc.pc
	rm -rf $(DESTDIR)$(includedir)/oomdoc
	rm -f $(MAN_PAGES:man/%=$(DESTDIR)$(man1dir)/%)
	rm -f $(DESTDIR)$(bashcompdir)/oomdoc
	rm -rf $(DESTDIR)$(pythondir)/oomdoc

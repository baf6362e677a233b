# dtlab - build, run, check, test. `make help` lists the targets.
#
# Everything is found by its place, so adding a file needs no edit here:
#   lib/<layer>/*.c           -> libdt.a
#   lib/<layer>/<backend>/*.c -> libdt.a too: a backend's own folder
#                             (lib/comm/emul/; lib/comm/mpi/ only with MPI)
#   lib/include/dt/*.h        public headers: each must compile alone, and
#                             dt/dt.h must include every other one
#   tools/<name>.c            -> build/bin/<name>
#   tools/<name>/*.c          -> build/bin/<name> (a tool too big for one file)
#   tests/lib/*.c             -> build/tests/lib/grade (libdt's unit tests)
#   $(IMPL)/NN-topic/*.c      -> the lab's code; run.c, if present, is the lab's program,
#                             with run_*.c (its parts, linked into it alone); a file
#                             IMPL lacks comes from labs/NN-topic/
#   tests/NN-topic/*.c        -> build/<impl>/NN-topic/grade (the graded tests)
#   tests/NN-topic/mutants/*.patch   known-bad variants of the solution (make test)
#   tests/NN-topic/hidden_*.c        hidden tests (left out of the student tree)
#   chapters/NN-topic.md      the lab's chapter
#   bench/table.sh            the benchmark table (make bench)
#   bench/<name>.sh           one detailed benchmark (make bench-<name>)
#   bench/<name>.c            -> build/bench/<name>, a benchmark's program
#   lib/<layer>/nccl/*.c      the nccl backend, in make gpu's libdt only
#   gpu/*.cu, gpu/*.c         CUDA kernels and GPU programs (make gpu: build/gpu/)
#   tests/gpu/*.c             -> build/gpu/tests/gpu/grade (skipped without a GPU)
#
# Output is one line per step (V=1 prints the full commands); the build runs
# as many jobs as there are cores unless the command line says -j.

CC      ?= cc
SAN     ?=
IMPL    ?= labs
WERROR  ?=
# OPENBLAS=0 builds without OpenBLAS (dt_sgemm's built-in kernel), into
# build/noblas/ unless BUILD says; auto (default) uses it where installed.
OPENBLAS ?= auto
ifeq ($(filter 0 auto,$(OPENBLAS)),)
  $(error OPENBLAS must be 0 or auto, not '$(OPENBLAS)')
endif
BUILD   ?= build$(if $(SAN),/$(SAN))$(if $(filter 0,$(OPENBLAS)),/noblas)
BIN     := $(BUILD)/bin
LAB     ?=
TEST    ?=
ARGS    ?=
NVCC    ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc),nvcc)

# V=1 prints every command in full; by default each step is one line
# ("  CC      lib/core/env.c").
V ?= 0
ifeq ($(filter 0 1,$(V)),)
  $(error V must be 0 or 1, not '$(V)')
endif
Q    := $(if $(filter 1,$(V)),,@)
# STEPS=0 drops those lines too (make run and run-lab summarise their build).
STEPS ?= 1
step  = $(if $(filter 1,$(V)),,$(if $(filter 0,$(STEPS)),,@printf '  %-7s %s\n' '$(1)' '$(2)'))

# Parallel by default, as many jobs as cores. GNU make 4.3 does not show -j
# in MAKEFLAGS while it reads the Makefile, so the command line (and a
# MAKEFLAGS from the environment) is read from /proc; a sub-make inherits
# its parent's jobs.
NPROC   := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
J_GIVEN := $(shell { tr '\0' '\n' </proc/$$PPID/cmdline; printf '%s\n' $$MAKEFLAGS; } 2>/dev/null | \
             grep -qE '^(-[A-Za-z]*j|--jobs)' && echo 1)
ifeq ($(MAKELEVEL)$(J_GIVEN),0)
  MAKEFLAGS += -j$(NPROC)
endif

# The showcase of `make run`: what it builds (RUN_TARGET, made with
# IMPL=RUN_IMPL), then the command it runs (RUN_CMD). Point these at another
# program to show something else.
# Today: the digits MLP trained with data parallelism on 4 thread ranks,
# compared with 1 rank (ARGS="--ranks 8 --backend proc --net ib100", --help).
RUN_IMPL   := labs
RUN_TARGET := $(BIN)/dttrain
RUN_CMD    := $(RUN_TARGET) --showcase $(ARGS)

# -O1 under AddressSanitizer, as its documentation advises: the same
# checks, and its build (every object instrumented) compiles in about 0.6 of
# -O2's time.
OPT := $(if $(filter address,$(SAN)),-O1,-O2)
BASE_CFLAGS := -std=c11 $(OPT) -g -Wall -Wextra $(WERROR) -D_GNU_SOURCE
CFLAGS  := $(BASE_CFLAGS) -pthread -Ilib/include -MMD -MP
# Every program gets the BLAS kernels check of lib/tensor/blas_startup.c.
LDFLAGS += -Wl,-u,dt_blas_startup_check
# gold, where binutils has it (on PATH; found without starting a process):
# it links a lab's test program in half the time of the default ld (42 ms
# against 84 here), and the suites link a few thousand. LD_GOLD=0: the
# default linker.
ifneq ($(LD_GOLD),0)
  LDFLAGS += $(if $(wildcard $(addsuffix /ld.gold,$(subst :, ,$(PATH)))),-fuse-ld=gold)
endif
LDLIBS  := -lm -lpthread -lrt

ifeq ($(SAN),address)
  CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
else ifeq ($(SAN),thread)
  CFLAGS += -fsanitize=thread
  LDFLAGS += -fsanitize=thread
else ifneq ($(SAN),)
  $(error SAN must be address or thread, not '$(SAN)')
endif

# OpenBLAS is optional: without it, sgemm uses the built-in blocked kernel.
# Under ThreadSanitizer it is left out: its own thread pool is not instrumented.
HAVE_OPENBLAS := $(if $(filter thread,$(SAN))$(filter 0,$(OPENBLAS)),,$(shell pkg-config --exists openblas 2>/dev/null && echo 1))
ifeq ($(HAVE_OPENBLAS),1)
  CFLAGS += -DDT_HAVE_OPENBLAS $(shell pkg-config --cflags openblas)
  LDLIBS := $(shell pkg-config --libs openblas) $(LDLIBS)
endif

# MPI is optional: with mpicc on the PATH (Open MPI or MPICH) and a backend
# folder that uses it (lib/<layer>/mpi/), libdt gets the mpi backend. MPI=0
# turns it off; it is off under sanitizers (the MPI libraries are not
# instrumented).
# MPICC picks the family: mpicc (the system's default, Open MPI on Debian),
# mpicc.openmpi, mpicc.mpich, or a path. MPIRUN, the launcher of `make
# test-mpi` and `make check BACKEND=mpi`, follows it (mpicc.mpich:
# mpirun.mpich); its flags follow the family its --version names: Open MPI
# 4, Open MPI 5 (PRRTE's spelling of oversubscription) or MPICH's Hydra
# (docs/cluster.md). Use BUILD=build/mpich for a second family beside the
# first (SEED=build: it starts from the first one's objects).
MPI ?= $(if $(SAN),0,auto)
MPICC ?= mpicc
MPIRUN ?= $(subst mpicc,mpirun,$(MPICC))
ifneq ($(MPI),0)
  MPI_USERS := $(wildcard lib/*/mpi/*.c)
  MPICC_OK  := $(if $(MPI_USERS),$(shell command -v $(MPICC) 2>/dev/null))
  ifneq ($(MPICC_OK),)
    MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null || $(MPICC) -compile_info 2>/dev/null | cut -d' ' -f2-)
    MPI_LIBS   := $(shell $(MPICC) --showme:link 2>/dev/null || $(MPICC) -link_info 2>/dev/null | cut -d' ' -f2-)
    # only the files that read them get them (MPI_OBJS below)
    DT_MPI_CFLAGS := -DDT_HAVE_MPI $(filter -I% -D%,$(MPI_CFLAGS))
    LDLIBS += $(MPI_LIBS)
    MPI_FAMILY := $(shell $(MPIRUN) --version 2>&1 | sed -n 's/.*(Open MPI) \([0-9]*\).*/openmpi\1/p; s/.*HYDRA.*/mpich/p' | head -n 1)
    MPIRUN_FLAGS := $(if $(filter mpich,$(MPI_FAMILY)),-bind-to none,$(if $(filter openmpi4,$(MPI_FAMILY)),--oversubscribe,--map-by :OVERSUBSCRIBE) --bind-to none $(if $(filter 0,$(shell id -u)),--allow-run-as-root))
    # what tests/grader/test_main.c and tests/mpi/run.sh run
    export DT_MPIRUN := $(MPIRUN) $(MPIRUN_FLAGS)
    export DT_MPI_FAMILY := $(MPI_FAMILY)
  endif
endif

# The GPU build: `make gpu` runs this Makefile again with GPU=1 into
# build/gpu/ (GPU_BUILD): libdt with the nccl backend (lib/comm/nccl/), the
# CUDA kernels and programs of gpu/ (nvcc), their tests (tests/gpu/) and the
# GPU benchmarks (bench/gpu_*.c). The CPU build never needs CUDA.
GPU ?= 0
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
GPU_BUILD ?= build/gpu
NVCC_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
# Per-thread default streams: each host thread's kernels and copies on its
# own CUDA stream (gpu/gpu.h), so that two dt/stream.h streams run at once.
NVCC_FLAGS := -std=c++17 -O2 $(NVCC_ARCH) --default-stream per-thread
GPU_CU     := $(sort $(wildcard gpu/*.cu))
GPU_CSRCS  := $(sort $(wildcard gpu/*.c))
GPU_OBJS   := $(GPU_CU:%.cu=$(BUILD)/obj/%.o) $(filter-out $(BUILD)/obj/gpu/dtdoctor.o,$(GPU_CSRCS:%.c=$(BUILD)/obj/%.o))
ifeq ($(GPU),1)
  CFLAGS += -DDT_HAVE_NCCL -I$(CUDA_HOME)/include -Igpu
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lnccl -lcudart -lstdc++
  # A lab's GPU bodies (lab 15's stream_gpu.c) call gpu/gpu.h, and its GPU
  # tests the probe of tests/gpu/: both link into every lab's test binary
  # here, and lab-objects.sh counts gpu.h's functions as public.
  LAB_GPU_OBJS := $(GPU_OBJS) $(BUILD)/obj/tests/gpu/gpu_test.o
  LAB_GPU_API  := gpu/gpu.h
endif

# The build's identity: the compiler and every flag, which also carry what
# was detected (OpenBLAS, MPI, SAN). $(BUILD)/identity holds them and is
# rewritten only when they change; every object and program depends on it,
# so that a change (OpenBLAS installed, CC=clang, another -O) rebuilds what
# it affects. WERROR is left out: it changes which warnings stop the build,
# not what is built (the suite builds mutants without it, beside the rest).
# MPI's part (the flags of mpicc's family, or none) is apart, in
# $(BUILD)/identity-mpi: only the files it reaches depend on it (MPI_OBJS).
IDENTITY      := $(BUILD)/identity
IDENTITY_MPI  := $(BUILD)/identity-mpi
CC_VERSION    := $(shell $(CC) --version 2>/dev/null | head -n 1)
IDENTITY_TEXT := cc=$(CC) ($(CC_VERSION)); cflags=$(filter-out $(WERROR),$(CFLAGS)); \
                 ldflags=$(LDFLAGS); ldlibs=$(filter-out $(MPI_LIBS),$(LDLIBS))$(if $(filter 1,$(GPU)),; nvcc=$(NVCC_FLAGS))
IDENTITY_MPI_TEXT := mpi=$(DT_MPI_CFLAGS); libs=$(MPI_LIBS)
NO_BUILD_GOALS := help clean deps gpu doctor
ifneq ($(filter-out $(NO_BUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
  # SEED=DIR: a new build folder starts from the objects of DIR, a build of
  # the same identity (CI's builds beside the first: MPI=0, MPICH, and the
  # student tree's), so that only what differs is compiled (the files MPI's
  # flags reach, a source that is not the same).
  ifneq ($(SEED),)
    ifeq ($(wildcard $(IDENTITY)),)
      ifeq ($(IDENTITY_TEXT),$(shell cat $(SEED)/identity 2>/dev/null))
        SEED_ERR := $(shell tools/seed-build.sh $(SEED) $(BUILD) 2>&1)
        ifneq ($(.SHELLSTATUS),0)
          $(error SEED=$(SEED): $(SEED_ERR))
        endif
        $(info seed: $(BUILD) starts from the objects of $(SEED))
      else
        $(info seed: $(SEED) is not a build of this identity (compiler, flags): $(BUILD) is built from scratch)
      endif
    endif
  endif
  ifneq ($(IDENTITY_TEXT),$(shell cat $(IDENTITY) 2>/dev/null))
    $(shell mkdir -p $(BUILD))
    $(file >$(IDENTITY),$(IDENTITY_TEXT))
  endif
  ifneq ($(IDENTITY_MPI_TEXT),$(shell cat $(IDENTITY_MPI) 2>/dev/null))
    $(shell mkdir -p $(BUILD))
    $(file >$(IDENTITY_MPI),$(IDENTITY_MPI_TEXT))
  endif
endif
# Nothing is written outside $(BUILD), or a folder the user named: the
# temporary files of the compiler, the scripts, the tests and the programs
# go to $(BUILD)/tmp, unless TMPDIR names a folder. (dtgrade gives each
# test a folder of its own below it, and checks that it is left empty.)
ifeq ($(TMPDIR),)
  export TMPDIR := $(abspath $(BUILD))/tmp
  ifneq ($(filter-out $(NO_BUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
    $(shell mkdir -p $(TMPDIR))
  endif
endif

# A program's link line: its objects and libraries, not the identity file.
LINK = $(Q)$(CC) $(LDFLAGS) $(filter-out $(IDENTITY),$^) $(LDLIBS) -o $@

# A layer's files, and its backends' folders (lib/comm/emul/, lib/comm/mpi/):
# an mpi/ folder is compiled only where MPI is (DT_HAVE_MPI).
# A nccl/ folder only in `make gpu`'s build (GPU=1, DT_HAVE_NCCL).
LIB_MPI_SRCS := $(wildcard lib/*/mpi/*.c)
LIB_NCCL_SRCS := $(wildcard lib/*/nccl/*.c)
LIB_SRCS   := $(sort $(wildcard lib/*/*.c) \
                $(filter-out $(LIB_MPI_SRCS) $(LIB_NCCL_SRCS),$(wildcard lib/*/*/*.c)) \
                $(if $(MPICC_OK),$(LIB_MPI_SRCS)) $(if $(filter 1,$(GPU)),$(LIB_NCCL_SRCS)))
LIB_OBJS   := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIBDT      := $(BUILD)/libdt.a

# A tool is tools/<name>.c, or a folder tools/<name>/ whose .c files make
# one program (and may share a header there).
TOOL_SRCS  := $(sort $(wildcard tools/*.c))
TOOL_DIRS  := $(sort $(patsubst tools/%/,%,$(dir $(wildcard tools/*/*.c))))
TOOLS      := $(TOOL_SRCS:tools/%.c=$(BIN)/%) $(TOOL_DIRS:%=$(BIN)/%)
DTGRADE    := $(BIN)/dtgrade
DTGRADE_SRCS := $(or $(wildcard tools/dtgrade/*.c),tools/dtgrade.c)

BENCH_SRCS  := $(filter-out bench/mpi_%.c bench/gpu_%.c,$(wildcard bench/*.c))
BENCH_PROGS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

GRADER_OBJ := $(BUILD)/obj/tests/grader/test_main.o
UNIT_SRCS  := $(sort $(wildcard tests/lib/*.c))
UNIT_OBJS  := $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o)
UNIT_GRADE := $(BUILD)/tests/lib/grade
MPI_TEST_SRCS := $(sort $(wildcard tests/mpi/*.c))
MPI_GRADE  := $(BUILD)/tests/mpi/grade
FIXTURE_SRCS := $(sort $(wildcard tests/grader/fixtures/*.c))
FIXTURE    := $(if $(FIXTURE_SRCS),$(BUILD)/tests/grader/fixtures/grade)

# Labs: a lab is a folder tests/NN-topic/ with a matching $(IMPL)/NN-topic/.
# LAB=02 or LAB=02-collectives (or a list) selects labs for check and run-lab.
LABS       := $(sort $(notdir $(patsubst %/,%,$(dir $(wildcard tests/[0-9][0-9]-*/*.c)))))
SEL_LABS   := $(if $(LAB),$(sort $(foreach l,$(LAB),$(filter $(l) $(l)-%,$(LABS)))),$(LABS))
# Lab binaries of an implementation under build/ (a mutant's copy) keep its
# path; others (labs, solutions, a student's folder) get one folder each.
IMPL_DIR   := $(if $(filter $(BUILD)/%,$(IMPL)),$(IMPL),$(BUILD)/$(subst /,_,$(IMPL)))
SEL_GRADES := $(SEL_LABS:%=$(IMPL_DIR)/%/grade)
# A mistyped IMPL would only show up as link errors of every lab: say so.
ifeq ($(wildcard $(IMPL)/.),)
  $(error IMPL=$(IMPL) is no folder (labs, solutions, or a folder of NN-topic/ lab files))
endif

# dtgrade's options for `make check` (see `build/bin/dtgrade --help`).
GRADE_JOBS ?= 1
DTGRADE_FLAGS ?=
# Sanitizers slow tests down: their timeouts stretch (unless DT_TIMEOUT_SCALE says).
SAN_SCALE := $(if $(DT_TIMEOUT_SCALE),,$(if $(filter address,$(SAN)),3,$(if $(filter thread,$(SAN)),5)))
# `make check` builds each lab from the official files with only the
# student's fenced code spliced in: the official copy is tests/official/ in
# a student tree (and the autograder), labs/ here. RACE=0 leaves out the
# ThreadSanitizer runs of race-sensitive tests.
OFFICIAL ?= $(if $(wildcard tests/official/.),tests/official,labs)
RACE    ?= 1
# BACKEND=thread|proc|mpi: the backend of every launch that takes it from
# DT_BACKEND. With mpi each test runs under `mpirun -np MPI_NP` (the most
# ranks a test launches; tests/grader/test_main.c), and the race-sensitive
# tests' ThreadSanitizer runs are left out (MPI is not instrumented).
BACKEND ?=
MPI_NP  ?= 8
# BACKEND=nccl grades in make gpu's build (GPU=1 BUILD=build/gpu: only it
# has nccl), without the ThreadSanitizer runs (CUDA is not instrumented).
CHECK_ENV := $(if $(BACKEND),DT_BACKEND=$(BACKEND)) $(if $(filter mpi,$(BACKEND)),DT_MPI_NP=$(MPI_NP)) \
             $(if $(filter 1,$(GPU)),GPU=1)
CHECK_RACE := $(if $(filter mpi nccl,$(BACKEND)),0,$(RACE))

all: $(LIBDT) $(TOOLS) $(UNIT_GRADE) $(FIXTURE) lab-bins headers $(BENCH_PROGS)

$(BUILD)/obj/%.o: %.c $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,CC,$<)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# libdt's own calls keep their caller's site (dt_call_site in dt/comm.h).
$(BUILD)/obj/lib/%.o: CFLAGS += -DDT_LIBDT

# MPI's flags reach the files that read them alone: the mpi/ folders and
# lib/comm/backend.c, the one other reader of DT_HAVE_MPI (tests/grader/
# check-convention.sh checks that no other file does). Every other object
# is the same with MPI, without it, and with either family.
MPI_OBJS := $(BUILD)/obj/lib/comm/backend.o $(if $(MPICC_OK),$(LIB_MPI_SRCS:%.c=$(BUILD)/obj/%.o))
$(MPI_OBJS): CFLAGS += $(DT_MPI_CFLAGS)
$(MPI_OBJS): $(IDENTITY_MPI)

$(LIBDT): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(call step,AR,$@)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(BIN)/%: $(BUILD)/obj/tools/%.o $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)

# A tool of several files: every .c of its folder.
define TOOL_DIR_RULE
$(BIN)/$(1): $$(patsubst %.c,$(BUILD)/obj/%.o,$$(sort $$(wildcard tools/$(1)/*.c))) $(LIBDT) $(IDENTITY)
	@mkdir -p $$(dir $$@)
	$$(call step,LINK,$$@)
	$$(LINK)
endef
$(foreach t,$(filter-out dtgrade,$(TOOL_DIRS)),$(eval $(call TOOL_DIR_RULE,$(t))))
$(BUILD)/obj/tools/%.o: CFLAGS += -I$(dir $<)

# The grader stands alone (libc and POSIX): it grades even when libdt does
# not build, and is never built with a sanitizer.
$(DTGRADE): $(DTGRADE_SRCS) $(wildcard tools/dtgrade/*.h) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(DTGRADE_SRCS) -o $@

$(UNIT_GRADE): $(UNIT_OBJS) $(GRADER_OBJ) $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)

# The mpi backend's tests (tests/mpi/run.sh runs them under mpirun).
$(BUILD)/obj/tests/mpi/%.o: CFLAGS += -Itests/lib
$(MPI_GRADE): $(MPI_TEST_SRCS:%.c=$(BUILD)/obj/%.o) $(GRADER_OBJ) $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)

$(FIXTURE): $(FIXTURE_SRCS:%.c=$(BUILD)/obj/%.o) $(GRADER_OBJ) $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)

$(BUILD)/obj/tests/%.o: CFLAGS += -Itests/grader

# Each public header compiles on its own (included twice: its guard works),
# and dt/dt.h includes every other one.
HEADERS     := $(sort $(wildcard lib/include/dt/*.h))
HEADER_OBJS := $(HEADERS:lib/include/dt/%.h=$(BUILD)/obj/headers/%.o)
headers: $(HEADER_OBJS) $(BUILD)/obj/headers/umbrella.ok
$(BUILD)/obj/headers/%.o: lib/include/dt/%.h $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,HEADER,$<)
	$(Q)printf '#include "dt/%s.h"\n#include "dt/%s.h"\n' $* $* | \
	  $(CC) $(CFLAGS) -MF $(@:.o=.d) -MT $@ -x c -c - -o $@
$(BUILD)/obj/headers/umbrella.ok: $(HEADERS)
	@mkdir -p $(dir $@)
	$(Q)missing=$$(for h in $(filter-out %/dt.h,$(HEADERS)); do \
	  grep -q "^#include \"dt/$$(basename $$h)\"" lib/include/dt/dt.h || echo " dt/$$(basename $$h)"; done); \
	  if [ -n "$$missing" ]; then echo "lib/include/dt/dt.h does not include:$$missing"; exit 1; fi
	$(Q)touch $@

# The rules a lab's objects must keep before its test binary is linked
# (what they call, their static storage), and the renaming that charges
# their allocations to the rank: tests/grader/lab-objects.sh.
LAB_CHECK := tests/grader/lab-objects.sh tests/grader/refused-symbols tests/grader/untagged.redefine

# One lab's rules: its code from $(IMPL), its graded tests, its program
# (run.c and its parts run_*.c: they stay out of the test binary).
# A file with no student fence (a header, run.c, a figures file) lives only
# in LAB_BASE (labs/, or the official copy of a student tree): a file that
# $(IMPL)/NN-topic/ lacks is taken from there, for solutions/, a student's
# copy or a mutant alike. The pattern rule of $(IMPL) comes first, so that
# a file it has is its own (with IMPL=labs both rules are the same one).
# The test binary links the lab's objects as lab-objects.sh checked and
# renamed them (obj/graded/); the program links them as compiled.
LAB_BASE   = $(OFFICIAL)
define LAB_RULES
$(1)_OWN   := $$(sort $$(wildcard $(IMPL)/$(1)/*.c))
$(1)_SRCS  := $$($(1)_OWN) $$(filter-out $$(patsubst $(IMPL)/%,$(LAB_BASE)/%,$$($(1)_OWN)),$$(sort $$(wildcard $(LAB_BASE)/$(1)/*.c)))
$(1)_CODE  := $$(filter-out run.c run_%.c,$$(notdir $$($(1)_SRCS)))
$(1)_OBJS  := $$($(1)_CODE:%.c=$(IMPL_DIR)/obj/$(1)/%.o)
$(1)_GOBJS := $$($(1)_CODE:%.c=$(IMPL_DIR)/obj/graded/$(1)/%.o)
$(1)_ROBJS := $$(patsubst %.c,$(IMPL_DIR)/obj/$(1)/%.o,$$(filter run.c run_%.c,$$(notdir $$($(1)_SRCS))))
$(1)_TOBJS := $$(patsubst %.c,$(IMPL_DIR)/obj/tests/%.o,$$(sort $$(wildcard tests/$(1)/*.c))) $(LAB_GPU_OBJS)
$(1)_INC   := -I$(IMPL)/$(1) $$(if $$(filter-out $(IMPL),$(LAB_BASE)),-I$(LAB_BASE)/$(1))
$(IMPL_DIR)/obj/$(1)/%.o: $(IMPL)/$(1)/%.c $(IDENTITY)
	@mkdir -p $$(dir $$@)
	$$(call step,CC,$$<)
	$$(Q)$$(CC) $$(CFLAGS) $$($(1)_INC) -c $$< -o $$@
$(IMPL_DIR)/obj/$(1)/%.o: $(LAB_BASE)/$(1)/%.c $(IDENTITY)
	@mkdir -p $$(dir $$@)
	$$(call step,CC,$$<)
	$$(Q)$$(CC) $$(CFLAGS) $$($(1)_INC) -c $$< -o $$@
$(IMPL_DIR)/obj/tests/tests/$(1)/%.o: tests/$(1)/%.c $(IDENTITY)
	@mkdir -p $$(dir $$@)
	$$(call step,CC,$$<)
	$$(Q)$$(CC) $$(CFLAGS) -Itests/grader $$($(1)_INC) -c $$< -o $$@
$(IMPL_DIR)/obj/graded/$(1)/checked: $$($(1)_OBJS) $$($(1)_TOBJS) $(LIBDT) $(LAB_CHECK)
	@mkdir -p $$(dir $$@)
	$$(call step,CHECK,$(IMPL)/$(1))
	$$(Q)rm -f $$@ $$(dir $$@)*.o
	$$(Q)CC="$$(CC)" LAB_SRC="$(IMPL)/$(1) $(LAB_BASE)/$(1)" GPU_API="$(LAB_GPU_API)" tests/grader/lab-objects.sh $(1) $$(dir $$@) $(LIBDT) $$($(1)_TOBJS) -- $$($(1)_OBJS)
	$$(Q)touch $$@
$(IMPL_DIR)/$(1)/grade: $(IMPL_DIR)/obj/graded/$(1)/checked $$($(1)_TOBJS) $(GRADER_OBJ) $(LIBDT) $(IDENTITY)
	@mkdir -p $$(dir $$@)
	$$(call step,LINK,$$@)
	$$(Q)$$(CC) $$(LDFLAGS) $$($(1)_GOBJS) $$($(1)_TOBJS) $(GRADER_OBJ) $(LIBDT) $$(LDLIBS) -o $$@
$(IMPL_DIR)/$(1)/run: $$($(1)_ROBJS) $$($(1)_OBJS) $(LIBDT) $(IDENTITY)
	@mkdir -p $$(dir $$@)
	$$(call step,LINK,$$@)
	$$(LINK)
LAB_BINS += $(IMPL_DIR)/$(1)/grade $$(if $$(filter %/run.c,$$($(1)_SRCS)),$(IMPL_DIR)/$(1)/run)
endef
$(foreach lab,$(LABS),$(eval $(call LAB_RULES,$(lab))))

lab-bins: $(LAB_BINS)

# ------------------------------------------------------------ running

# Builds TARGET (with IMPL=$(2)) in one line of output, unless it is up to
# date; compiler messages still show.
define build_quietly
	+@if ! $(MAKE) -q --no-print-directory IMPL=$(2) $(1) 2>/dev/null; then \
	  echo "  BUILD   $(1) (V=1 shows every command)"; \
	  $(MAKE) --no-print-directory IMPL=$(2) $(if $(filter 1,$(V)),,STEPS=0) $(1); fi
endef

run:
	$(call build_quietly,$(RUN_TARGET),$(RUN_IMPL))
	@echo "  RUN     $(RUN_CMD)"
	@$(RUN_CMD)

run-lab:
	@test -n "$(SEL_LABS)" || { echo "run-lab: LAB=NN names no lab (labs: $(LABS))"; exit 2; }
	@test -f $(IMPL)/$(SEL_LABS)/run.c -o -f $(LAB_BASE)/$(SEL_LABS)/run.c || { echo "run-lab: $(LAB_BASE)/$(SEL_LABS) has no run.c"; exit 2; }
	$(call build_quietly,$(IMPL_DIR)/$(SEL_LABS)/run,$(IMPL))
	@echo "  RUN     $(IMPL_DIR)/$(SEL_LABS)/run $(ARGS)"
	@BUILD=$(BUILD) $(IMPL_DIR)/$(SEL_LABS)/run $(ARGS)

# ------------------------------------------------------------ grading

# Builds each selected lab from OFFICIAL with the fences of IMPL spliced in
# (a lab that does not build is graded 0, never from a stale binary) and
# grades them all: see tests/grader/check.sh. Exits 0 whatever the score.
check:
	@test -n "$(SEL_LABS)" || { echo "check: LAB=$(LAB) names no lab (labs: $(LABS))"; exit 2; }
	@test "$(BACKEND)" != mpi -o -n "$(MPICC_OK)" || { echo "check: BACKEND=mpi needs libdt built with MPI (mpicc found, MPI not 0, no SAN)"; exit 2; }
	@test "$(BACKEND)" != nccl -o "$(GPU)" = 1 || { echo "check: BACKEND=nccl needs make gpu's build: make check BACKEND=nccl GPU=1 BUILD=$(GPU_BUILD)"; exit 2; }
	@env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS DT_QUIET=1 MAKE="$(MAKE)" BUILD=$(BUILD) SAN=$(SAN) CC="$(CC)" \
	  $(CHECK_ENV) WERROR="$(WERROR)" IMPL=$(IMPL) OFFICIAL=$(OFFICIAL) LABS="$(SEL_LABS)" RACE=$(CHECK_RACE) \
	  SHOWN="$(or $(SHOWN),$(IMPL))" \
	  TEST="$(TEST)" GRADE_JOBS=$(GRADE_JOBS) TIMEOUT_SCALE=$(SAN_SCALE) \
	  DTGRADE_FLAGS="$(DTGRADE_FLAGS)" DT_RESULTS=$(or $(DT_RESULTS),$(BUILD)/results.json) \
	  tests/grader/check.sh

# The flake hunt: every lab's solution (LAB=NN: some) graded ROUNDS times
# (default 5) with every core kept busy; fails on any test that ever fails.
# See tests/grader/stress.sh.
stress:
	@env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS DT_QUIET=1 MAKE="$(MAKE)" BUILD=$(BUILD) SAN=$(SAN) \
	  CC="$(CC)" WERROR="$(WERROR)" ROUNDS="$(or $(ROUNDS),5)" LABS="$(if $(LAB),$(SEL_LABS))" \
	  tests/grader/stress.sh

# The unit tests of libdt, each in a process of its own as the suite runs
# them (some read a variable once per process); `$(UNIT_GRADE)` alone runs
# them all in one process, for a debugger. BACKEND=proc runs every launch
# that takes its backend from DT_BACKEND on processes. BACKEND=mpi runs the
# communicator's tests (names with comm_), each under `mpirun -np MPI_NP`:
# they are the ones whose launches take the backend from DT_BACKEND; the
# others test what lies below the communicator (tensors, kernels, nn), or
# launch on threads by name (the trainers', the trace reader's), and under
# mpirun would only run the same thing in every process.
UNIT_ONLY := $(if $(filter mpi,$(BACKEND)),--only comm_)
unit: $(UNIT_GRADE) $(DTGRADE)
	@test "$(BACKEND)" != mpi -o -n "$(MPICC_OK)" || { echo "unit: BACKEND=mpi needs libdt built with MPI (mpicc found, MPI not 0, no SAN)"; exit 2; }
	$(CHECK_ENV) $(DTGRADE) --tests-root tests $(UNIT_ONLY) "lib=$(UNIT_GRADE)"

# The communicator's tests on the mpi backend, under mpirun -np 2 and 4
# (skipped, saying why, where MPI is not there or libdt was built without it).
test-mpi: $(MPI_GRADE)
	@env -u MAKEFLAGS MPI_BUILT="$(if $(MPICC_OK),yes)" tests/mpi/run.sh $(MPI_GRADE)

# The same tests across two network namespaces over TCP, as two machines
# (skipped, saying why, where namespaces cannot be made: it needs root).
test-mpi-netns: $(MPI_GRADE)
	@if [ -z "$(MPICC_OK)" ]; then echo "test-mpi-netns: skipped: libdt was built without MPI"; \
	  else tests/mpi/netns.sh test $(MPI_GRADE); fi

# The project's own suite: see tests/grader/suite.sh.
# lib/'s include graph between layers and the call circles between its
# files, read from the code (tools/deps-graph.sh); make test checks them
# against docs/design.md (tests/tools/check-deps.sh).
deps-graph: $(LIBDT)
	@tools/deps-graph.sh --build $(BUILD)

# The chapters' text lint (tests/chapters/lint.py), then every number a
# chapter quotes from a run, and its worked arithmetic, checked against the
# code (tests/chapters/numbers.py: the check blocks). Staff only: the blocks
# run the solutions.
check-chapters: all
	@test -n "$(STAFF_TREE)" || { echo "check-chapters: the staff's (its blocks run solutions/)"; exit 2; }
	@python3 tests/chapters/lint.py
	@env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS BUILD=$(BUILD) python3 tests/chapters/numbers.py --build $(BUILD) $(if $(filter 1,$(WALL)),--wall)

test:
	@env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS BUILD=$(BUILD) SAN=$(SAN) WERROR="$(WERROR)" \
	  CC="$(CC)" MAKE="$(MAKE)" MPI_BUILT="$(if $(MPICC_OK),yes)" tests/grader/suite.sh

# One verdict on every CPU: the unit tests and every lab's solution under
# each OpenBLAS kernel set this CPU runs (KERNELS="A B" to choose) and in
# a build without OpenBLAS (OPENBLAS=0, $(BUILD)/noblas); fails naming the
# set of any test that fails. KERNELS_DONE=own: make test has just graded
# OpenBLAS's own choice in this build (CI), so it is not graded twice;
# built-in: make test SAN=thread has graded the built-in sgemm (CI).
# LOAD=1: each set graded as a round of make stress (every core busy, the
# race-sensitive tests under ThreadSanitizer too; CI's flake hunt). See
# tests/grader/kernels.sh.
test-kernels:
	@test -z "$(SAN)" || { echo "test-kernels: not with SAN (ThreadSanitizer builds leave OpenBLAS out)"; exit 2; }
	@env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS BUILD=$(BUILD) WERROR="$(WERROR)" CC="$(CC)" \
	  MAKE="$(MAKE)" KERNELS="$(KERNELS)" KERNELS_DONE="$(KERNELS_DONE)" LOAD="$(LOAD)" \
	  tests/grader/kernels.sh

# ------------------------------------------------------------ benchmarks

# A benchmark's programs (BENCH_PROGS, built by `make` too, so that they
# never rot), linked with libdt; bench/mpi_*.c are OpenMPI's side, built
# with mpicc when a script asks.
$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)
$(BUILD)/bench/mpi_%: bench/mpi_%.c
	@command -v mpicc >/dev/null || { echo "$@: needs mpicc (make deps installs OpenMPI)"; exit 1; }
	@mkdir -p $(dir $@)
	$(call step,MPICC,$<)
	$(Q)mpicc -O3 -o $@ $<
bench-progs: $(BENCH_PROGS) $(BIN)/dttrain $(BIN)/dtbench $(BIN)/dtrun
# bench/lib.sh is the scripts' shared functions, not a benchmark.
BENCH_NAMES := $(patsubst bench/%.sh,%,$(filter-out bench/table.sh bench/lib.sh,$(wildcard bench/*.sh)))

# The table of every figure beside its peer (bench/table.sh; ROUNDS=N),
# then the mpi backend across two network namespaces over TCP beside the
# link's own bandwidth (bench/netns.sh: root only; it says why it skips).
# The scripts run make themselves: as a make of its own (MAKEFLAGS dropped),
# not a sub-make without the jobserver (which warns and runs -j1).
BENCH_ENV := env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS BUILD=$(BUILD)
bench: bench-progs
	@$(BENCH_ENV) bash bench/table.sh
	@$(BENCH_ENV) bash bench/netns.sh

# One detailed benchmark: make bench-comm, bench-compute, bench-ddp, bench-kernels,
# bench-mpi, bench-netns.
bench-%: bench-progs
	@test -n "$(filter $*,$(BENCH_NAMES))" || { echo "bench-$*: no such benchmark (bench/NAME.sh: $(BENCH_NAMES))"; exit 2; }
	@$(BENCH_ENV) bash bench/$*.sh

# ------------------------------------------------------------ packaging

# The student tree: no solutions, no hidden tests, no mutants, no CI or staff
# notes; the official labs in tests/official/ and a README for students
# (tests/grader/package.sh). It builds, and its `make check` grades the
# untouched labs at 0.
DIST := $(BUILD)/dist
dist-student: $(DTGRADE)
	@tests/grader/package.sh student $(DIST) $(DTGRADE)
	@echo "dist-student: $(DIST) ($$(find $(DIST) -type f | wc -l) files)"

# The Gradescope autograder: the tree without solutions and mutants, but
# with the hidden tests, and the two scripts Gradescope runs. LAB=NN: one
# zip per selected lab, $(GS)-NN.zip, that grades that lab alone (one
# Gradescope assignment per lab; docs/instructors.md).
GS := $(BUILD)/gradescope
gradescope:
ifeq ($(LAB),)
	@tests/grader/package.sh autograder $(GS) $(DTGRADE)
	@echo "gradescope: $(GS).zip (every lab)"
else
	@test -n "$(SEL_LABS)" || { echo "gradescope: LAB=$(LAB) names no lab (labs: $(LABS))"; exit 2; }
	@$(foreach l,$(SEL_LABS),tests/grader/package.sh autograder $(GS)-$(firstword $(subst -, ,$(l))) $(DTGRADE) $(l) && \
	  echo "gradescope: $(GS)-$(firstword $(subst -, ,$(l))).zip (lab $(l))" &&) true
endif

# ------------------------------------------------------------ GPU, deps

# `make gpu`: the GPU build (GPU=1 above), where nvcc and NCCL are found;
# else it says which is missing and skips (exit 0). It compiles and links
# everything; running needs a GPU (make doctor, bench/gpu-check.sh).
GPU_TESTS  := $(sort $(wildcard tests/gpu/*.c))
GPU_GRADE  := $(BUILD)/tests/gpu/grade
GPU_BENCH  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/gpu_*.c))
$(BUILD)/obj/%.o: %.cu $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,NVCC,$<)
	$(Q)$(NVCC) $(NVCC_FLAGS) -Ilib/include -Igpu -Xcompiler -Wall,-Wextra $(if $(WERROR),-Werror all-warnings) -c $< -o $@
$(GPU_GRADE): $(GPU_TESTS:%.c=$(BUILD)/obj/%.o) $(GPU_OBJS) $(GRADER_OBJ) $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)
$(BIN)/dtdoctor: $(BUILD)/obj/gpu/dtdoctor.o $(GPU_OBJS) $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)
$(BUILD)/bench/gpu_%: $(BUILD)/obj/bench/gpu_%.o $(GPU_OBJS) $(LIBDT) $(IDENTITY)
	@mkdir -p $(dir $@)
	$(call step,LINK,$@)
	$(LINK)
gpu-all: $(LIBDT) $(TOOLS) $(GPU_GRADE) $(BIN)/dtdoctor $(GPU_BENCH)
gpu:
	@if ! command -v $(NVCC) >/dev/null 2>&1; then echo "gpu: skipped: nvcc not found (CUDA toolkit; NVCC=path)"; \
	elif [ ! -f $(CUDA_HOME)/include/nccl.h ] || ! ls $(CUDA_HOME)/lib64/libnccl.so* >/dev/null 2>&1; then \
	  echo "gpu: skipped: NCCL not found in $(CUDA_HOME) (include/nccl.h, lib64/libnccl.so)"; \
	else mkdir -p "$$TMPDIR" && $(MAKE) --no-print-directory GPU=1 BUILD=$(GPU_BUILD) NVCC=$(NVCC) gpu-all && \
	  echo "gpu: built $(GPU_BUILD)/ (libdt with nccl, tests/gpu/grade, bin/dtdoctor): run them on a GPU"; fi

# `make doctor`: the GPU machine's preflight (tools/doctor.sh, which exits
# 0 ready, 1 a failure to fix, saying the next step, 77 no GPU here). make
# cannot pass 77 on: here it exits 0 after "doctor: skipped: no GPU here"
# (scripts that must tell a skip from ready run tools/doctor.sh).
doctor:
	@NVCC=$(NVCC) CUDA_HOME=$(CUDA_HOME) GPU_BUILD=$(GPU_BUILD) MAKE="$(MAKE)" tools/doctor.sh; \
	  rc=$$?; [ $$rc -eq 77 ] && exit 0; exit $$rc

# The workbook as a web book (tools/book/): the chapters and their hints
# rendered into build/book/ (open build/book/index.html), which works
# offline; test-book opens every page in headless Chromium with requests
# outside the book refused, and plants faults in copies to show it fails.
# Their tools: make deps-book (pandoc, Node.js, Chromium, and clang's
# wasm32 target for the planner in the page, from Debian; npm installs the
# pinned playwright-core on the first test-book). Without clang's wasm32
# target the book is built without its planner, and test-book fails.
book:
	@CC="$(CC)" WERROR="$(WERROR)" tools/book/build.sh build/book
test-book: book
	@tools/book/test.sh build/book
deps-book:
	@tools/setup-deps.sh book

# The packages of every set (tools/setup-deps.sh: the script the development
# container, the Gradescope image and CI run too): only the missing ones.
deps:
	@tools/setup-deps.sh build staff mpi

# ------------------------------------------------------------ help

# The targets of this tree: the staff's only where solutions/ exists (the
# student tree of dist-student is built from this same Makefile).
STAFF_TREE := $(wildcard solutions/.)
, := ,
# Each row: the target or variable, then what it does, in two columns.
HELP_ROW = @printf '  %-26s %s\n' "$(1)" "$(2)"
help:
	@echo "dtlab: make [TARGET] [VARIABLE=value ...]"
	@echo
	$(call HELP_ROW,make,build libdt$(,) the tools and every lab's programs into $(BUILD)/)
	$(call HELP_ROW,make run,build and run the showcase (ARGS=--help lists its options))
	$(call HELP_ROW,make run-lab LAB=NN,build and run a lab's own program (ARGS=\"...\" passes options))
	$(call HELP_ROW,make check,grade the labs: LAB=NN one lab$(,) TEST=text some tests$(,))
	$(call HELP_ROW,,RACE=0 without the ThreadSanitizer runs of race-sensitive tests)
	$(call HELP_ROW,make bench,the benchmark table: libdt beside OpenMPI and PyTorch (ROUNDS=N))
	$(call HELP_ROW,make bench-NAME,one detailed benchmark$(,) bench/NAME.sh: $(BENCH_NAMES))
	$(call HELP_ROW,make gpu,the GPU build into build/gpu/ (nvcc$(,) NCCL; skips without them))
	$(call HELP_ROW,make doctor,a GPU machine's preflight (versions$(,) GPUs$(,) NCCL allreduce))
	$(call HELP_ROW,make gpu-all,(part of make gpu$(,) with GPU=1) what the GPU build makes)
	$(call HELP_ROW,make deps-graph,lib/'s include graph between layers and its call circles)
	$(call HELP_ROW,make deps,install the Debian/Ubuntu packages that are missing)
	$(call HELP_ROW,make book,the chapters as a web book: build/book/index.html)
	$(call HELP_ROW,make deps-book,install the book's tools: pandoc$(,) Node.js$(,) Chromium$(,) clang for wasm32)
	$(call HELP_ROW,make test-book,the book opened in headless Chromium$(,) offline$(,) every page checked)
	$(call HELP_ROW,make headers,(part of make) each public header compiles alone)
	$(call HELP_ROW,make lab-bins,(part of make) every lab's test program and own program)
	$(call HELP_ROW,make bench-progs,(part of make bench) the benchmarks' programs)
	$(call HELP_ROW,make clean,remove $(BUILD)/)
	$(call HELP_ROW,make help,this list)
ifneq ($(STAFF_TREE),)
	@echo
	@echo "  staff (this tree has solutions/):"
	$(call HELP_ROW,make test,the project's suite$(,) what CI runs (also with SAN=...))
	$(call HELP_ROW,make unit,libdt's unit tests (BACKEND=proc|mpi: on that backend))
	$(call HELP_ROW,make test-mpi,the communicator's tests under mpirun -np 2 and 4)
	$(call HELP_ROW,make test-mpi-netns,the same across two network namespaces over TCP (root))
	$(call HELP_ROW,make test-kernels,unit tests and solutions under each OpenBLAS kernel set this)
	$(call HELP_ROW,,CPU runs (KERNELS='A B' to choose) and without OpenBLAS)
	$(call HELP_ROW,make check-chapters,the chapters' text lint; every number they quote$(,) rerun)
	$(call HELP_ROW,,(WALL=1: judge the wall-clock figures too$(,) on a quiet machine))
	$(call HELP_ROW,make stress,the flake hunt: every solution graded ROUNDS=N times$(,) cores busy)
	$(call HELP_ROW,make check IMPL=solutions,grade the reference solutions (BACKEND=proc|mpi: on that backend))
	$(call HELP_ROW,make dist-student,the student tree$(,) in $(BUILD)/dist/)
	$(call HELP_ROW,make gradescope,the Gradescope autograder of every lab$(,) $(BUILD)/gradescope.zip)
	$(call HELP_ROW,make gradescope LAB=NN,that of one lab (one assignment per lab)$(,) $(BUILD)/gradescope-NN.zip)
endif
	@echo
	$(call HELP_ROW,V=1,show every command (default: one line per step))
	$(call HELP_ROW,SAN=address|thread,build with sanitizers$(,) into build/SAN/)
	$(call HELP_ROW,OPENBLAS=0,build without OpenBLAS (the built-in sgemm)$(,) into build/noblas/)
	$(call HELP_ROW,IMPL=$(if $(STAFF_TREE),labs|solutions|DIR,labs|DIR),which lab code to build (default labs))
	$(call HELP_ROW,BUILD=DIR  CC=...,another build folder$(,) another compiler)
	$(call HELP_ROW,MPICC=mpicc.mpich,another MPI family (MPIRUN follows; docs/cluster.md))
	$(call HELP_ROW,SEED=DIR,a new BUILD starts from DIR's objects (MPI=0$(,) another MPICC))
	$(call HELP_ROW,-jN,jobs at once (default: $(NPROC)$(,) one per core))
	@echo
	@echo "this build: $(CC_VERSION); OpenBLAS $(if $(HAVE_OPENBLAS),yes,no$(if $(filter thread,$(SAN)), (not under SAN=thread))$(if $(filter 0,$(OPENBLAS)), (OPENBLAS=0))); \
	MPI $(if $(MPICC_OK),yes ($(MPI_FAMILY)$(,) $(MPIRUN)),$(if $(MPI_USERS),no,no (no library code uses it yet))); SAN $(or $(SAN),none)"

# Removes $(BUILD): all of build/ by default, build/address/ with SAN=address.
clean:
	rm -rf $(BUILD)

.PHONY: all lab-bins headers run run-lab check check-chapters book test-book deps-book stress unit test test-kernels test-mpi test-mpi-netns deps-graph bench bench-progs dist-student gradescope gpu gpu-all doctor deps clean help
.DELETE_ON_ERROR:
# Objects between a source and a program are kept (make would delete them
# as intermediate files, and rebuild them next time).
.SECONDARY:
# No suffix rules (.c.o and the like): every rule is written above. With
# them, make searched them for each of the hundreds of dependency files
# included below, which took most of its start-up (0.13 s of CPU a make,
# 0.03 s without), and the suites start make hundreds of times.
.SUFFIXES:

-include $(wildcard $(BUILD)/obj/*/*.d $(BUILD)/obj/*/*/*.d $(BUILD)/obj/lib/*/*/*.d $(BUILD)/obj/tools/*/*.d $(BUILD)/obj/tests/*/*/*.d $(IMPL_DIR)/obj/*/*.d \
                   $(IMPL_DIR)/obj/tests/tests/*/*.d)

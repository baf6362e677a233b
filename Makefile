# dtlab - build, run, check, test.
#
#   make                 libdt.a, the tools and every lab's programs
#   make run             the showcase
#   make check [LAB=NN] [IMPL=labs|solutions]   grade the labs
#   make test            the project's own suite (what CI runs)
#   make SAN=address|thread ...   the same with sanitizers, in build/SAN/
#
# Everything is found by its place, so adding a file needs no edit here:
#   lib/<layer>/*.c           -> libdt.a
#   tools/<name>.c            -> build/bin/<name>
#   tests/lib/*.c             -> build/tests/lib/grade (libdt's unit tests)
#   $(IMPL)/NN-topic/*.c      -> the lab's code; run.c, if present, is the lab's program
#   tests/NN-topic/*.c        -> build/<impl>/NN-topic/grade (the graded tests)

CC      ?= cc
SAN     ?=
IMPL    ?= labs
WERROR  ?=
BUILD   ?= build$(if $(SAN),/$(SAN))
BIN     := $(BUILD)/bin

CFLAGS  := -std=c11 -O2 -g -Wall -Wextra $(WERROR) -D_GNU_SOURCE -pthread \
           -Ilib/include -MMD -MP
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
HAVE_OPENBLAS := $(if $(filter thread,$(SAN)),,$(shell pkg-config --exists openblas 2>/dev/null && echo 1))
ifeq ($(HAVE_OPENBLAS),1)
  CFLAGS += -DDT_HAVE_OPENBLAS $(shell pkg-config --cflags openblas)
  LDLIBS := $(shell pkg-config --libs openblas) $(LDLIBS)
endif

LIB_SRCS   := $(sort $(wildcard lib/*/*.c))
LIB_OBJS   := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIBDT      := $(BUILD)/libdt.a

TOOL_SRCS  := $(sort $(wildcard tools/*.c))
TOOLS      := $(TOOL_SRCS:tools/%.c=$(BIN)/%)

GRADER_OBJ := $(BUILD)/obj/tests/grader/test_main.o
UNIT_SRCS  := $(sort $(wildcard tests/lib/*.c))
UNIT_OBJS  := $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o)
UNIT_GRADE := $(BUILD)/tests/lib/grade

# Labs: a lab is a folder tests/NN-topic/ with a matching $(IMPL)/NN-topic/.
LABS       := $(sort $(notdir $(patsubst %/,%,$(dir $(wildcard tests/[0-9][0-9]-*/*.c)))))
IMPL_DIR   := $(BUILD)/$(subst /,_,$(IMPL))

all: $(LIBDT) $(TOOLS) $(UNIT_GRADE) lab-bins

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBDT): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN)/%: $(BUILD)/obj/tools/%.o $(LIBDT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< $(LIBDT) $(LDLIBS) -o $@

$(UNIT_GRADE): $(UNIT_OBJS) $(GRADER_OBJ) $(LIBDT)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(UNIT_OBJS) $(GRADER_OBJ) $(LIBDT) $(LDLIBS) -o $@

$(BUILD)/obj/tests/%.o: CFLAGS += -Itests/grader

# One lab's rules: its code from $(IMPL), its graded tests, its program.
define LAB_RULES
$(1)_CODE  := $$(filter-out %/run.c,$$(sort $$(wildcard $(IMPL)/$(1)/*.c)))
$(1)_OBJS  := $$($(1)_CODE:$(IMPL)/%.c=$(IMPL_DIR)/obj/%.o)
$(1)_TOBJS := $$(patsubst %.c,$(IMPL_DIR)/obj/tests/%.o,$$(sort $$(wildcard tests/$(1)/*.c)))
$(IMPL_DIR)/obj/$(1)/%.o: $(IMPL)/$(1)/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -I$(IMPL)/$(1) -c $$< -o $$@
$(IMPL_DIR)/obj/tests/tests/$(1)/%.o: tests/$(1)/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -Itests/grader -I$(IMPL)/$(1) -c $$< -o $$@
$(IMPL_DIR)/$(1)/grade: $$($(1)_OBJS) $$($(1)_TOBJS) $(GRADER_OBJ) $(LIBDT)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@
$(IMPL_DIR)/$(1)/run: $(IMPL_DIR)/obj/$(1)/run.o $$($(1)_OBJS) $(LIBDT)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@
LAB_BINS += $(IMPL_DIR)/$(1)/grade $(if $(wildcard $(IMPL)/$(1)/run.c),$(IMPL_DIR)/$(1)/run)
endef
$(foreach lab,$(LABS),$(eval $(call LAB_RULES,$(lab))))

lab-bins: $(LAB_BINS)

# The unit tests of libdt, run in-process (dtgrade runs them isolated).
unit: $(UNIT_GRADE)
	$(UNIT_GRADE)

clean:
	rm -rf build

.PHONY: all lab-bins unit clean
.DELETE_ON_ERROR:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

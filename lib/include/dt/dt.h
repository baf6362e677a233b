/* dt/dt.h - all of libdt in one include, for programs that use many
 * layers (the tools, a lab's driver). Library code includes the one header
 * of each layer it uses instead, so that the include lines show which
 * layers a file depends on, and each layer only the ones below it.
 * The build checks that this file includes every public header. */
#ifndef DT_DT_H
#define DT_DT_H

#include "dt/core.h"
#include "dt/ckpt.h"
#include "dt/net.h"
#include "dt/comm.h"
#include "dt/window.h"   /* (comm.h includes these two) */
#include "dt/callsite.h"
#include "dt/failure.h"
#include "dt/tensor.h"
#include "dt/stream.h"
#include "dt/nn.h"
#include "dt/tp.h"
#include "dt/optim.h"
#include "dt/data.h"
#include "dt/metrics.h"
#include "dt/sched.h"
#include "dt/sim.h"
#include "dt/train.h"
#include "dt/train_state.h" /* (train.h includes these two) */
#include "dt/parallel.h"
#include "dt/cli.h"

#endif

/* A GPU proves itself before saywho trusts it: every op of its backend runs
 * once on small inputs (well under a second) and must agree with the CPU
 * backend. A driver bug, a miscompiled kernel for a new architecture or a
 * broken card then sends device="auto" to the CPU with a sentence naming the
 * kernel and the GPU, instead of giving a user a wrong transcript. */
#ifndef SW_SELFCHECK_H
#define SW_SELFCHECK_H

#include "backend.h"

/* SW_OK when every op agrees with the CPU; SW_ERR_DEVICE naming the first
 * that does not (or fails), and the GPU. Leaves nothing allocated. */
sw_status sw_backend_self_check(sw_backend *dev, sw_error *err);

#endif

/* The LSTM's input projection, gx = x w_ih^T for every timestep and both
 * directions at once, is one matmul over the same bytes seen as matrices:
 * x [B*T, in], w_ih [D*4H, in] and gx [B*T, D*4H]. The CPU and CUDA
 * backends build these views here, so that both multiply the same shapes. */
#ifndef SW_LSTM_INPUT_VIEWS_H
#define SW_LSTM_INPUT_VIEWS_H

#include "tensor.h"

/* x [B, T, in], w_ih [D, 4H, in]; gx holds B*T*D*4H floats. */
static inline void sw_lstm_input_views(const sw_tensor *x, const sw_tensor *w_ih, int64_t h,
                                       float *gx, sw_tensor *xm, sw_tensor *wm, sw_tensor *gm)
{
    int64_t bt = x->shape[0] * x->shape[1], in = x->shape[2], d = w_ih->shape[0];
    *xm = *x;
    *wm = *w_ih;
    *gm = *x;
    xm->ndim = 2;
    xm->shape[0] = bt;
    xm->shape[1] = in;
    wm->ndim = 2;
    wm->shape[0] = d * 4 * h;
    wm->shape[1] = in;
    gm->ndim = 2;
    gm->shape[0] = bt;
    gm->shape[1] = d * 4 * h;
    gm->data = gx;
}

#endif

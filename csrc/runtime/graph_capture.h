/* A graph of the ops a caller queues, captured with the retries the CUDA
 * backend's products ask for (issue 37). Shared by the Whisper decoder's
 * step (whisper_decoder.c) and the encoder's window
 * (whisper_encoder_graph.c). */
#ifndef SW_GRAPH_CAPTURE_H
#define SW_GRAPH_CAPTURE_H

#include "backend.h"

/* Queues the ops to record on the backend the capture is open on. */
typedef sw_status (*sw_capture_ops)(void *ctx, sw_error *err);

/* *out = the graph of what ops(ctx) queues on `be` (a backend with graphs:
 * capture_begin non-NULL). A capture an op refuses with SW_ERR_NOMEM (a
 * product's scratch the backend's workspace could not serve, backend.h) is
 * captured again: the next capture_begin grows the workspace to what was
 * asked. Any other refusal, or one NOMEM too many, is the error returned,
 * with *out NULL. Nothing runs meanwhile: a capture only records. */
sw_status sw_capture_graph(sw_backend *be, sw_capture_ops ops, void *ctx, sw_graph **out,
                           sw_error *err);

#endif

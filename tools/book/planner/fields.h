/* fields.h - what the web book's planner passes across WebAssembly, by
 * name: a plan's arguments (a dt_sim_model's and a dt_sim_layout's fields,
 * as ints, then a cluster preset) and the figures of its dt_sim_cost.
 * entry.c (the module the page runs) and vectors.c (the native planner's
 * expected numbers) both walk these lists; the page reads the names from
 * the module, so that a field is named in one place. */
#ifndef DT_BOOK_FIELDS_H
#define DT_BOOK_FIELDS_H

#define DT_BOOK_MODEL_ARGS(X) X(layers) X(hidden) X(heads) X(ffn) X(seq) X(vocab) X(dropout)

#define DT_BOOK_LAYOUT_ARGS(X)                                                                 \
    X(tp) X(pp) X(dp) X(vpp) X(sp) X(global_batch) X(micro_batch) X(recompute) X(zero)       \
    X(dtype) X(schedule)

/* Every scalar of dt_sim_cost (the list of communications apart). */
#define DT_BOOK_COST_FIELDS(X)                                                                 \
    X(params) X(params_device) X(devices) X(microbatches) X(inflight) X(mem_params)          \
    X(mem_grads) X(mem_optim) X(mem_acts) X(mem_bytes) X(mem_stage) X(fits) X(model_flops)   \
    X(hw_flops) X(t_matmul) X(t_memory) X(t_compute) X(t_tp) X(t_pp) X(t_dp) X(bubble)       \
    X(t_bubble) X(t_optimizer) X(step_s) X(tokens_per_s) X(tflops_per_device)                \
    X(hw_tflops_per_device) X(mfu) X(hfu)

#endif /* DT_BOOK_FIELDS_H */

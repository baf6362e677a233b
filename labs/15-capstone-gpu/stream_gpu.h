/* stream_gpu.h - lab 15: where the given task bodies run (chapter 15,
 * section 9). Given code: nothing here is yours to write.
 *
 * LAB_ON_HOST: the host device of dt/stream.h, the buffers in host memory,
 * the library's CPU layers. LAB_ON_GPU (make gpu's build only, where
 * DT_HAVE_NCCL is defined; elsewhere init refuses it): the parameters,
 * gradients, activations and the gradients between layers in device memory,
 * the layers through gpu/gpu.h's kernels, the collectives on device buffers
 * through libdt's nccl backend, SGD through dt_gpu_sgd_update
 * (stream_gpu.c). The streams, events and race check are dt/stream.h's in
 * both: a stream is a host thread running its tasks in order, and on the
 * GPU each task launches its work on that thread's own CUDA stream and
 * waits for it before it returns, so the compute and the communication
 * stream are two CUDA streams that run at once, and an event recorded
 * after a task is an event after its kernels. Your code is the same on
 * both. */
#ifndef LAB_STREAM_GPU_H
#define LAB_STREAM_GPU_H

typedef enum { LAB_ON_HOST = 0, LAB_ON_GPU } lab_device_kind;

#endif /* LAB_STREAM_GPU_H */

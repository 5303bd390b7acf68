// Only with MEMGATE_TORCH_EXT_CUDA=1: a CUDA kernel file.
__global__ void scale_kernel(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

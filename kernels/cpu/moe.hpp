// MoE arithmetic, CPU reference kernels (float and double): the router's softmax over
// experts, deterministic top-k, the aux load-balancing loss, and the combine of expert
// outputs with their routing weights. The promises (orders, tie-breaks) are those of
// reference/modules/moe_router.hpp and moe.hpp; they are restated per function.
//
// Index arrays (`position`) are host memory: the dispatch plan is built on the host.
// Nothing here is threaded: MoE shapes in the case set are small, and a sequential
// loop is the documented order.
#pragma once
#include <cstdint>

namespace rcts::cpu {

// Row softmax over `cols`: m = max scanned from column 0, z_e = detmath::exp(l_e - m),
// Z = sum_e z_e (from 0, column order), p_e = z_e / Z. out may not alias in.
template <typename T>
void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols);
// s = sum_e dout_e * p_e (column order, from 0), din_e = p_e * (dout_e - s). din may not alias.
template <typename T>
void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols);

// Per token: the k best experts of probs (tokens, E) by (prob descending, index
// ascending) into topk (tokens, k), and weights[t][k] = probs[t][topk[t][k]].
// Requires 1 <= k <= E (std::invalid_argument otherwise).
template <typename T>
void topk_select(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k);
// The top-k of one row (the order above): out[0, k).
template <typename T>
void topk_row(const T* probs, int64_t experts, int64_t k, int32_t* out);

// aux = (coeff * E) * sum_e f_e * P_e with f_e = count_e / (tokens * k) and
// P_e = (sum_t probs[t][e]) / tokens (token order from 0; experts in order from 0).
// 0 when tokens == 0.
template <typename T>
T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k, double coeff);

// dprobs (tokens, E) = 0 except dprobs[t][topk[t][k]] = dweights[t][k].
template <typename T>
void topk_scatter(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts, int64_t k);

// out[t][i] = (sum_k weights[t*K+k] * expert_out[position[t*K+k]][i]) [+ shared[t][i]],
// the sum from 0 in k order, the shared term added last. shared may be null.
template <typename T>
void moe_combine(T* out, const T* weights, const T* expert_out, const int64_t* position, const T* shared,
                 int64_t tokens, int64_t K, int64_t h);
// Backward of the combine: dexpert[position[a]][i] = weights[a] * dout[t][i] and
// dweights[a] = sum_i dout[t][i] * expert_out[position[a]][i] (i order, from 0).
template <typename T>
void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                          const int64_t* position, int64_t tokens, int64_t K, int64_t h);
// dx[t][i] = ((sum_k dsent[position[t*K+k]][i]) + drouter[t][i]) [+ dshared[t][i]],
// each sum from 0 in the order written. dshared may be null.
template <typename T>
void moe_input_grad(T* dx, const T* dsent, const int64_t* position, const T* drouter, const T* dshared,
                    int64_t tokens, int64_t K, int64_t h);

}  // namespace rcts::cpu

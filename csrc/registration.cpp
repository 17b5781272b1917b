// The kbit operator library: every schema is defined here, once. Backends add
// their kernels with TORCH_LIBRARY_IMPL next to the code (csrc/cpu, csrc/cuda);
// fake kernels for torch.compile live in kbit/_fake.py.
//
// Layouts (docs/format.md): "flat" = quantize's output, stable and serializable;
// "tiled" = the GEMM layout, private and versioned (csrc/common/tiled_layout.h).
#include <torch/extension.h>
#include <torch/library.h>

#include "common/tiled_layout.h"
#ifdef KBIT_WITH_CUDA
#include "cuda/format/dequantize_tiled.h"
#include "cuda/gemm/dispatch_query.h"
#endif

TORCH_LIBRARY(kbit, m) {
  // W [*, N, K] float -> packed [*, N, K/32, k] int32, absmax [*, N, K/32] uint8 (E4M4),
  // row_scale [*, N] float32 (power of two; NaN for a row holding a non-finite value).
  m.def("quantize(Tensor W, Tensor codebook, int k) -> (Tensor packed, Tensor absmax, Tensor row_scale)");
  // Flat layout -> [*, N, K] of dtype.
  m.def("dequantize(Tensor packed, Tensor absmax, Tensor row_scale, Tensor codebook, int k, "
        "ScalarType dtype) -> Tensor");
  // Flat -> tiled: packed [*, ceil(N/16), ceil(K/256), k, 32, 4], absmax [*, ceil(N/16), ceil(K/256), 128].
  m.def("repack(Tensor packed, Tensor absmax) -> (Tensor packed_tiled, Tensor absmax_tiled)");
  // Tiled -> flat, for a weight of N rows and K columns.
  m.def("unrepack(Tensor packed_tiled, Tensor absmax_tiled, int N, int K) -> (Tensor packed, Tensor absmax)");
  // Tiled layout -> [*, N, K] of dtype (N = row_scale.size(-1)).
  m.def("dequantize_tiled(Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "int k, int K, ScalarType dtype) -> Tensor");
  // y[M, N] = x[M, K] @ W[N, K]^T, x float16/bfloat16, W tiled [N, K].
  m.def("gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "int k) -> Tensor");
  // MoE: x[T, K] sorted by expert, expert e owns rows expert_offsets[e] .. expert_offsets[e+1]
  // (int32 [E+1]); y[t] = x[t] @ W[e]^T with W tiled [E, N, K].
  m.def("grouped_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, "
        "Tensor codebook, Tensor expert_offsets, int k) -> Tensor");
  // The kernels behind gemm / grouped_gemm, callable directly (CUDA only) for tests and
  // benchmarks: the tensor-core kernel for any M (tokens in chunks of 64), and its grouped
  // form for any E <= 1024 (no host sync). Same arguments and results as the two above.
  // warps_per_unit (a tuning aid for benchmarks/tune_dispatch.py): 0 = what gemm would use; 1, 2,
  // 4 or 8 (at most K's 256-column groups) forces the warps that share one 16-row unit along K.
  m.def("mma_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "int k, int warps_per_unit=0) -> Tensor");
  // The GEMV for M <= 128 (CUDA): one persistent launch (decode). decode: 'auto' (the measured
  // choice), 'mma' (pair table in shared memory, mma.m16n8k16 with the tokens as its n = 8 side,
  // M <= 128: past 16 rows in token chunks of 16) or 'shuffle' (the scalar form: codebook in lane registers, a shuffle and an FFMA per
  // weight, M <= 4).
  m.def("gemv_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "int k, str decode='auto') -> Tensor");
  // The tensor-core tile kernel for any M (CUDA, GPUs with enough shared memory per block:
  // sm_90): x staged once per 256-row CTA tile in shared memory; what gemm dispatches to
  // between the small-M kernel and dequantize + cuBLAS.
  m.def("tile_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "int k) -> Tensor");
  // The warpgroup-MMA kernel for any M (CUDA, Hopper: an sm_90a build on a compute-9.0 GPU):
  // the tile kernel's design with asynchronous wgmma; errors clearly elsewhere.
  m.def("wgmma_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "int k) -> Tensor");
  // The large-M path alone (CUDA): W dequantized into a workspace, then cuBLAS (what gemm
  // dispatches to where the kernel loses; benchmarks/tune_dispatch.py times it).
  m.def("dequant_cublas_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, "
        "Tensor codebook, int k) -> Tensor");
  m.def("grouped_mma_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, "
        "Tensor codebook, Tensor expert_offsets, int k) -> Tensor");
  // The grouped GEMV (CUDA, E <= 1024): chunks of up to 16 rows per expert (4 with the shuffle
  // decode), decode as gemv_gemm's;
  // grouped_gemm takes it where it measured fastest (grouped_gemv_wins, tc_dispatch.cpp).
  m.def("grouped_gemv_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, "
        "Tensor codebook, Tensor expert_offsets, int k, str decode='auto') -> Tensor");
  // The grouped tile kernel (CUDA, sm_90-size shared memory, E <= 1024): what grouped_gemm
  // dispatches to when the experts get several tokens each.
  m.def("grouped_tile_gemm(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, "
        "Tensor codebook, Tensor expert_offsets, int k) -> Tensor");
  // kbit.Experts' gate/up call: grouped_gemm over a weight [E, N, K] whose rows are gate and up interleaved in 8s
  // (each 16 rows: the gate rows of 8 outputs, then their up rows; N % 16 == 0), then silu_and_mul: [T, N / 2],
  // silu(gate) * up of the GEMM's outputs rounded to x's dtype, fp32 math. On CUDA one kernel where grouped_gemm
  // takes the grouped GEMV (the same bits as the two ops).
  m.def("grouped_gemm_silu_and_mul(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, "
        "Tensor codebook, Tensor expert_offsets, int k) -> Tensor");
  // A gated MLP's gate/up call (kbit.nn.GatedMLP): gemm over a weight [N, K] whose rows are gate and up interleaved in
  // 8s (grouped_gemm_silu_and_mul's layout; N % 16 == 0), then silu_and_mul: x [M, K] -> [M, N / 2]. On CUDA one
  // kernel where gemm takes the GEMV at M = 1 (decode; the same bits as the two ops).
  m.def("gemm_silu_and_mul(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "int k) -> Tensor");
  // kbit.Experts' decode calls: x [T, K], top_k_index [T, r] (int32 / int64) -> y [T r, N]: row t r + j is
  // x[t] @ W[top_k_index[t, j]]^T (the slots in order, no routing), NaN for an id outside [0, E). silu_and_mul:
  // grouped_gemm_silu_and_mul's gate/up weight and epilogue, [T r, N / 2]. On CUDA one grouped GEMV kernel up to 32
  // slots and 1024 experts where the tuning aids leave its plan (csrc/cuda/gemm/gemm_paths.h grouped_gemv_slots);
  // elsewhere moe_route_gather, grouped_gemm and the rows put back in order (csrc/common/moe_slots.h).
  m.def("grouped_gemm_slots(Tensor x, Tensor packed_tiled, Tensor absmax_tiled, Tensor row_scale, Tensor codebook, "
        "Tensor top_k_index, int k, bool silu_and_mul=False) -> Tensor");
  // The MoE glue of kbit.Experts (csrc/common/moe_aten.cpp, csrc/cuda/moe): for top_k_index [T, topk]
  // (int32/int64; an id outside [0, num_experts) is "no expert": sorted as expert E - 1, skipped by
  // moe_combine), moe_route sorts the T topk (token, slot) pairs p = t topk + j by expert, stably:
  // offsets [E + 1] int32 (expert e's rows offsets[e] .. offsets[e + 1]; offsets[E] = T topk), row_token
  // [T topk] int64 (row r's token, for moe_gather) and pair_row [T topk] int32 (pair p's row).
  m.def("moe_route(Tensor top_k_index, int num_experts) -> (Tensor offsets, Tensor row_token, Tensor pair_row)");
  // x [T, H], row_token [P] -> out [P, H] with out[r] = x[row_token[r]] (moe_route's rows; on CUDA an entry outside
  // [0, T) gives a NaN row, on the CPU an error).
  m.def("moe_gather(Tensor x, Tensor row_token) -> Tensor");
  // moe_route and moe_gather in one: x [T, H] -> moe_route's three outputs and x_sorted [T topk, H] (x's rows in
  // row order); on CUDA one kernel at decode sizes (kbit.Experts' first glue op).
  m.def("moe_route_gather(Tensor top_k_index, int num_experts, Tensor x) -> (Tensor offsets, Tensor row_token, "
        "Tensor pair_row, Tensor x_sorted)");
  // h [R, 2 I] -> silu(h[:, :I]) * h[:, I:] [R, I] in h's dtype (fp32 math). interleaved: h's columns are gate and
  // up in alternating groups of 8 (grouped_gemm_silu_and_mul's layout; 2 I % 16 == 0): output c from columns
  // 16 (c / 8) + c % 8 (gate) and that + 8 (up).
  m.def("silu_and_mul(Tensor h, bool interleaved=False) -> Tensor");
  // y [T topk, H] (rows as moe_route's) -> out [T, H] in y's dtype: sum over slots j, in order, of
  // top_k_weights[t, j] * y[pair_row[t topk + j]] over the slots with an expert, in fp32. pair_row None: y's rows are
  // the pairs in order (row t topk + j; grouped_gemm_slots' output).
  m.def("moe_combine(Tensor y, Tensor top_k_weights, Tensor top_k_index, Tensor? pair_row, int num_experts) -> Tensor");
  // An MoE router's top-k: logits [T, E] -> (weights [T, top_k] in logits' dtype, ids [T, top_k] int64). ids: the
  // experts by logit, descending (ties to the lower index, NaN first); weights: softmax(logits) in fp32 at ids,
  // divided by their sum where normalize (HF Qwen3-MoE's router after its linear, norm_topk_prob).
  m.def("router_topk(Tensor logits, int top_k, bool normalize=True) -> (Tensor weights, Tensor ids)");
}

namespace {
#ifdef KBIT_WITH_CUDA
pybind11::tuple gemm_dispatch(int64_t M, int64_t N, int64_t K, int64_t k, int64_t device, const std::string& dtype) {
  const auto r = kbit::cuda::gemm_dispatch(M, N, K, static_cast<int>(k), static_cast<int>(device), dtype);
  return pybind11::make_tuple(r.first, r.second);
}

pybind11::tuple grouped_gemm_dispatch(int64_t T, int64_t E, int64_t N, int64_t K, int64_t k, int64_t device) {
  const auto r = kbit::cuda::grouped_gemm_dispatch(T, E, N, K, static_cast<int>(k), static_cast<int>(device));
  return pybind11::make_tuple(std::get<0>(r), std::get<1>(r), std::get<2>(r));
}

// A tuning aid of modes 0 (the rule), 1 (never) and 2 (`on`), refusing bools: True would pass as 1 = never,
// the opposite of what it says (an aid's earlier form took one).
template <typename Setter>
auto mode_aid(const char* name, const char* on, Setter setter) {
  return [name, on, setter](const pybind11::object& mode) {
    TORCH_CHECK(!pybind11::isinstance<pybind11::bool_>(mode), "kbit._C.", name, ": mode must be 0 (the rule), 1 (never) or ",
                on, ", not a bool");
    return setter(mode.cast<int64_t>());
  };
}
#endif

// kbit::gemm (and kbit::gemm_silu_and_mul, kbit.nn.GatedMLP's gate/up call) called through the C++ dispatcher from a
// plain pybind11 function: the same op and dispatch (autograd fallback, modes, profiler) as torch.ops.kbit.<op>,
// without the Python-side schema parsing and boxing of a torch.ops call (benchmarks/bench_dispatch.py compares both).
using GemmSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                 const at::Tensor&, int64_t);
template <const char* kOp>
at::Tensor gemm_op_direct(const at::Tensor& x, const at::Tensor& packed, const at::Tensor& absmax,
                          const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(kOp, "").typed<GemmSignature>();
  return op.call(x, packed, absmax, row_scale, codebook, k);
}
constexpr char kGemmOp[] = "kbit::gemm";
constexpr char kGemmSiluOp[] = "kbit::gemm_silu_and_mul";

bool cuda_kernels_compiled() {
#ifdef KBIT_WITH_CUDA
  return true;
#else
  return false;
#endif
}
}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "kbit C++/CUDA operators (registered under torch.ops.kbit)";
  m.attr("tiled_layout_version") = kbit::kTiledLayoutVersion;
  m.def("gemm_direct", &gemm_op_direct<kGemmOp>, pybind11::call_guard<pybind11::gil_scoped_release>(),
        "torch.ops.kbit.gemm through the C++ dispatcher (cheaper to call from Python; same arguments; the GIL is "
        "released during the call, as torch.ops does)");
  m.def("gemm_silu_and_mul_direct", &gemm_op_direct<kGemmSiluOp>,
        pybind11::call_guard<pybind11::gil_scoped_release>(),
        "torch.ops.kbit.gemm_silu_and_mul through the C++ dispatcher (as gemm_direct)");
  m.def("cuda_kernels_compiled", &cuda_kernels_compiled,
        "True when this build contains the CUDA kernels");
#ifdef KBIT_WITH_CUDA
  m.def("gemm_dispatch", &gemm_dispatch, pybind11::arg("M"), pybind11::arg("N"), pybind11::arg("K"),
        pybind11::arg("k"), pybind11::arg("device") = 0, pybind11::arg("dtype") = "float16",
        "(path, source) the CUDA gemm takes for x [M, K] @ W[N, K]^T at k bits on a device, x of dtype 'float16' or "
        "'bfloat16': path "
        "'gemv' (the GEMV, gemv_gemm), 'kernel' (small-M kernel, torch.ops.kbit.mma_gemm), 'tile' (tile_gemm), 'wgmma' (wgmma_gemm) or 'dequant_cublas', source the measured table's GPU or 'heuristic'");
  m.def("grouped_gemm_dispatch", &grouped_gemm_dispatch, pybind11::arg("T"), pybind11::arg("E"), pybind11::arg("N"),
        pybind11::arg("K"), pybind11::arg("k"), pybind11::arg("device") = 0,
        "(path, decode, source) the CUDA grouped_gemm takes for T rows over E experts of W[E, N, K] at k bits: path "
        "'gemv' (grouped_gemv_gemm, decode 'mma' or 'shuffle' under decode='auto'), 'kernel' (grouped_mma_gemm), "
        "'tile' (grouped_tile_gemm) or 'dequant_cublas' (E > 1024); source the measured table's GPU or 'heuristic'");
  m.def("dependent_launch", &kbit::cuda::dependent_launch_allowed,
        "Whether kbit's GEMM kernels (GEMV, small-M, tile, wgmma), the dequantize + cuBLAS path's dequantize and "
        "epilogue and kbit.Experts' route, activation and combine kernels launch with programmatic dependent launch "
        "on sm_90+ (on unless the environment set KBIT_PDL=0)");
  m.def("set_dependent_launch", &kbit::cuda::set_dependent_launch, pybind11::arg("allowed"),
        "Turn programmatic dependent launch on or off for later launches (CUDA graphs keep what they captured); "
        "returns the previous setting");
  m.def("_set_pdl_prefetch_bytes", &kbit::cuda::set_dependent_launch_prefetch_bytes, pybind11::arg("bytes"),
        "Tuning aid: bytes of its first tile a kernel launched with PDL asks L2 for before it waits (-1: the rule, "
        "one 256-column group per warp of the first unit; 0: none); returns the previous value");
  m.def("_set_gemv_min_token_slots", &kbit::cuda::set_gemv_min_token_slots, pybind11::arg("slots"),
        "Tuning aid: dense GEMV launches (mma decode) take the kernel with at least this many token slots (1: the "
        "rule, M as it is up to 4, then 8 or 16; else 2, 3, 4, 8 or 16); returns the previous value");
  const auto plan_dict = [](const kbit::cuda::GemvLaunchQuery& q) {
    pybind11::dict d;
    d["token_slots"] = q.token_slots;
    d["token_chunks"] = q.token_chunks;
    d["decode"] = q.decode;
    d["x_resident"] = q.x_resident;
    d["ring_stages"] = q.ring_stages;
    d["warps"] = q.warps;
    d["warps_per_unit"] = q.warps_per_unit;
    d["smem_bytes"] = q.smem_bytes;
    d["launch_smem_bytes"] = q.launch_smem_bytes;
    d["ctas_per_sm"] = q.ctas_per_sm;
    d["grid"] = q.grid;
    d["split_cluster"] = q.split_cluster;
    d["staged_layout"] = q.staged_layout;
    d["x_shared"] = q.x_shared;
    d["x_shared_run"] = q.x_shared_run;
    return d;
  };
  m.def("_gemv_launch_plan", [plan_dict](int64_t M, int64_t N, int64_t K, int64_t k, const std::string& decode,
                                         int64_t device) {
          return plan_dict(kbit::cuda::gemv_launch_plan(M, N, K, static_cast<int>(k), decode, static_cast<int>(device)));
        },
        pybind11::arg("M"), pybind11::arg("N"), pybind11::arg("K"), pybind11::arg("k"), pybind11::arg("decode") = "auto",
        pybind11::arg("device") = 0,
        "What gemv_gemm would launch for x [M, K] (fp16) @ W[N, K]^T at k bits, without launching: token_slots, "
        "token_chunks, decode, x_resident, ring_stages, warps, warps_per_unit (warps / warps_per_unit unit slots), smem_bytes (needed), launch_smem_bytes (with the spread's padding), ctas_per_sm, grid (CTAs), split_cluster (CTAs per cluster of the cluster split, 0 without), staged_layout (x staged: 0 one unit per CTA, 1 unit slots, 2 unit slots with the wide pair table)");
  m.def("_grouped_gemv_launch_plan", [plan_dict](int64_t T, int64_t E, int64_t N, int64_t K, int64_t k,
                                                 const std::string& decode, int64_t device) {
          const auto q = kbit::cuda::grouped_gemv_launch_plan(T, E, N, K, static_cast<int>(k), decode,
                                                              static_cast<int>(device));
          pybind11::dict d = plan_dict(q);
          d["chunk_rows"] = q.chunk_rows;
          d["schedule"] = q.schedule;
          return d;
        },
        pybind11::arg("T"), pybind11::arg("E"), pybind11::arg("N"), pybind11::arg("K"), pybind11::arg("k"),
        pybind11::arg("decode") = "auto", pybind11::arg("device") = 0,
        "What grouped_gemv_gemm would launch for T rows over E experts of W[E, N, K] (fp16) at k bits, without "
        "launching: _gemv_launch_plan's keys, chunk_rows (rows per chunk asked for) and schedule ('per_warp_static', "
        "'per_warp', 'per_cta_rows' or 'per_cta_scans')");
  m.def("_wgmma_launch_plan", [](int64_t M, int64_t N, int64_t K, int64_t k, int64_t device) {
          const auto q = kbit::cuda::wgmma_launch_plan(M, N, K, static_cast<int>(k), static_cast<int>(device));
          pybind11::dict d;
          d["tokens"] = q.tokens;
          d["row_tiles"] = q.row_tiles;
          d["splits"] = q.splits;
          d["ctas"] = q.ctas;
          d["grid_ctas"] = q.grid_ctas;
          d["first_stage_alone"] = q.first_stage_alone;
          d["resident_clusters"] = q.resident_clusters;
          d["units"] = q.units;
          d["whole_units"] = q.whole_units;
          d["stream"] = q.stream;
          return d;
        },
        pybind11::arg("M"), pybind11::arg("N"), pybind11::arg("K"), pybind11::arg("k"), pybind11::arg("device") = 0,
        "What wgmma_gemm would launch for x [M, K] @ W[N, K]^T at k bits, without launching: tokens and row_tiles "
        "(16-row tiles) per CTA, splits along K, ctas (of work), grid_ctas (launched: fewer where the CTAs are "
        "persistent, each running work CTAs in turn), first_stage_alone (the first stage's copies requested alone), "
        "resident_clusters (clusters of splits CTAs the GPU runs at once; the SMs for clusters of one), units (output "
        "tiles), whole_units (those one CTA runs over all of K; every unit without splits; 0 with stream) and stream "
        "(the stream-K schedule: grid_ctas CTAs sharing the units' 256-column steps evenly; splits 1, ctas = "
        "grid_ctas)");
  m.def("_set_wgmma_splits", &kbit::cuda::set_wgmma_splits, pybind11::arg("splits"),
        "Tuning aid: the K-splits of wgmma_gemm launches (0, the default: the split model; else 1 to 8, at most K's "
        "256-column groups; a tile's splits run as one cluster); returns the previous value");
  m.def("_set_wgmma_grid_clusters", &kbit::cuda::set_wgmma_grid_clusters, pybind11::arg("clusters"),
        "Tuning aid: the clusters wgmma_gemm launches, each running clusters of work in turn (persistent CTAs where "
        "fewer than the work): 0, the default: the rule (as many as the GPU runs at once, where every split unit is "
        "then its CTA's last; else one per cluster of work), -1: one per cluster of work, n: n, clamped to the work "
        "and to at least its split units (CTAs of 80-160 tokens only: others are launched one per cluster of work); "
        "returns the previous value");
  m.def("_set_wgmma_whole_clusters", &kbit::cuda::set_wgmma_whole_clusters, pybind11::arg("clusters"),
        "Tuning aid: the split tail of wgmma_gemm launches with splits: -1, the default: the rule (the full CTA waves "
        "of units run whole, the units past them split); 0 none (every unit split: the split model without the tail); "
        "else that many clusters of whole units (clamped to the units) before the split ones; returns the previous "
        "value");
  m.def("_set_wgmma_row_tiles", &kbit::cuda::set_wgmma_row_tiles, pybind11::arg("row_tiles"),
        "Tuning aid: the CTA shape of wgmma_gemm launches from M = 33: 0, the default: the rule (two warpgroups on "
        "128 rows x balanced chunks of 80-128 tokens above M = 64, or of 144-160 above 128; at M = 33-64 two on 128 x "
        "64 unless that takes more CTA waves than four on 256 x 64 or four run at least as many CTAs, each on fewer "
        "groups); 8 two warpgroups (64 tokens to M = 64, the rule's 80-160 above); 16 four (chunks of 64 tokens); "
        "returns the previous value");
  m.def("_set_wgmma_tokens", &kbit::cuda::set_wgmma_tokens, pybind11::arg("tokens"),
        "Tuning aid: the token chunk of wgmma_gemm launches at any M: 0, the default: the rule (16 to M = 16, 32 to "
        "M = 32, 64 to M = 64, balanced chunks of 80-128 above, or of 144-160 above 128); 16 or 32 four warpgroups "
        "on 256 rows; 64 the row tiles of _set_wgmma_row_tiles, else the M = 33-64 rule's; 80, 96, 112, 128, 144 or "
        "160 two warpgroups on 128 rows; returns the previous value");
  m.def("_set_wgmma_max_tokens", &kbit::cuda::set_wgmma_max_tokens, pybind11::arg("tokens"),
        "Tuning aid: the wide token chunks wgmma_gemm's rule may take above M = 128: 0, the default (ceil(M / 160) "
        "chunks balanced to 144 or 160 tokens where they are fewer than of 128 and the rule's model prefers them); "
        "160 (those chunks always of 160: session 52's rule); 128 (no wide chunks: session 51's rule, balanced "
        "chunks of 80-128); returns the previous value");
  m.def("_set_wgmma_stream", mode_aid("_set_wgmma_stream", "2 (always)", &kbit::cuda::set_wgmma_stream),
        pybind11::arg("mode"),
        "Tuning aid: the stream-K schedule of wgmma_gemm launches in the shapes of 80-160 tokens (a CTA per SM, the "
        "CTAs of each token chunk sharing the row blocks' 256-column steps evenly, the pieces of a unit added in a "
        "fixed order by its last piece): 0, the default: the rule (never: slower than the rule's plans on the H200, "
        "session 54); 1 never; 2 always (at most _set_wgmma_grid_clusters's count of CTAs where it forces a positive "
        "one; the plan keeps no stream-K where that count is below the token chunks, or the shape is not one of "
        "80-160 tokens); returns the previous mode");
  m.def("_set_wgmma_first_stage_alone",
        mode_aid("_set_wgmma_first_stage_alone", "2 (always)", &kbit::cuda::set_wgmma_first_stage_alone),
        pybind11::arg("mode"),
        "Tuning aid: whether wgmma_gemm launches request the first pipeline stage's copies alone and the other stages' "
        "once it landed: 0, the default: the rule (always, session 32); 1 never; 2 always; returns the previous mode");
  m.def("_set_gemv_spread", &kbit::cuda::set_gemv_spread, pybind11::arg("on"),
        "Tuning aid: whether dense GEMV launches pad their shared memory so that a grid smaller than what fits "
        "spreads over all SMs (on by default); returns the previous setting");
  m.def("_set_gemv_max_unit_slots", &kbit::cuda::set_gemv_max_unit_slots, pybind11::arg("slots"),
        "Tuning aid: the most unit slots a grouped GEMV CTA holds (1 to 8; 8, the default, is the rule: with the mma "
        "decode, slots of warps that each take their own units); returns the previous value");
  m.def("_dequant_parts", &kbit::cuda::dequant_tiled_parts, pybind11::arg("tiles"),
        "The work items the tiled dequantize splits each of `tiles` 16 x 256 tiles into on the current device (the "
        "rule, or the count _set_dequant_parts forces)");
  m.def("_set_dequant_parts", &kbit::cuda::set_dequant_tiled_parts, pybind11::arg("parts"),
        "Tuning aid: the work items each tile of the tiled dequantize (dequantize_tiled and the dequantize + cuBLAS "
        "path) is split into: 1, 2, 4 or 8; 0, the default: the rule (the most whose items the warps the GPU holds at "
        "once take in one round); returns the previous value");
  m.def("_set_gemv_split_cluster", &kbit::cuda::set_gemv_split_cluster, pybind11::arg("cluster"),
        "Tuning aid: the dense GEMV's cluster split, each CTA within one step of the same work (-1, the default: "
        "the rule, clusters of 2 at k = 5 where the tiles take two or more rounds of the plain grid; 0 never; 2, 4 "
        "or 8: clusters of that many CTAs wherever the split applies: M <= 4, mma decode, x staged, sm_90+); "
        "returns the previous value");
  m.def("_set_gemv_staged_layout", &kbit::cuda::set_gemv_staged_layout, pybind11::arg("layout"),
        "Tuning aid: the CTA layout of dense x-staged mma-decode GEMV launches of 1-4 rows: -1, the default: the "
        "rule (one unit per CTA); 0 one unit per CTA; 1 unit slots sharing one pair table (up to 8 warps a CTA); 2 unit slots with the wide "
        "pair table (k = 4: entries 256 bytes apart, a lookup's address one byte permute, the rings in the table's "
        "gaps); returns the previous value");
  m.def("_set_gemv_staged_stages", &kbit::cuda::set_gemv_staged_stages, pybind11::arg("stages"),
        "Tuning aid: the ring stages of the unit-slot layout (layout 1) of dense x-staged GEMV launches (0, the "
        "default: the rule, 2; else 2 to 4); returns the previous value");
  m.def("_set_gemv_unit_warps", &kbit::cuda::set_gemv_unit_warps, pybind11::arg("warps"),
        "Tuning aid: the warps per unit of mma-decode GEMV launches (0, the default: the rule; grouped, the halving "
        "while the units fill the slots, and at one token slot 1 or 2 by the critical path; dense decode at 1-4 rows, "
        "_set_gemv_decode_path_rule's; else 1 to 8, at most K's 256-column groups, and the decode path rule's "
        "choice then not made; grouped, with unit slots making up to 8 warps per CTA); returns the previous value");
  m.def("_set_gemv_decode_path_rule", &kbit::cuda::set_gemv_decode_path_rule, pybind11::arg("rule"),
        "Tuning aid: how the dense decode GEMV at 1-4 rows picks x resident and its warps per unit: 1 (default) by the "
        "critical path over the warps per unit (2, 4 and 8 at k = 4; 2 and the base elsewhere) and x staged (session "
        "66), 0 session 37's rule; returns the previous value");
  m.def("_set_gemv_grouped_chunk_rows", &kbit::cuda::set_gemv_grouped_chunk_rows, pybind11::arg("rows"),
        "Tuning aid: the rows per chunk (unit) of grouped GEMV launches (0, the default: the mean rows per expert "
        "rounded up; else 1 to 16, the shuffle decode at most 4); returns the previous value");
  m.def("_set_gemv_x_resident", &kbit::cuda::set_gemv_x_resident, pybind11::arg("mode"),
        "Tuning aid: whether dense GEMV launches (mma decode) copy x once per warp and stream only codes: 0 never, "
        "1 (default) the rule (from 8 token slots where the x image fits, at 2-4 rows where the x-staged grid takes "
        "the tiles in two or more rounds or 1.5 where K has 16 or more 256-column groups, and at one row at k = 4 "
        "from three rounds where its critical path is at least 10% shorter than x staged's: "
        "_set_gemv_decode_path_rule), 2 at any token slots where it fits; returns the previous mode");
  m.def("_set_gemv_grouped_x_shared", &kbit::cuda::set_gemv_grouped_x_shared, pybind11::arg("mode"),
        "Tuning aid: whether grouped GEMV launches (mma decode, 4-8 token slots, one warp per unit, 16-row tiles a "
        "multiple of the CTA's unit slots) share x: a CTA's warps take one chunk's tiles a round and its x is copied "
        "once per CTA into a double-buffered image; 0 never (which also keeps the halving rule's 2 warps per unit where "
        "the rule would take 1 to share x), 1 (default) where it applies (CTAs of 8 or 16 warps), 2 there in CTAs of "
        "8 warps, 3 where it applies and at 4-7 token slots on K of 2 or 3 256-column groups with one unit a warp a "
        "round too (the rule shares x there only in runs of 2 or 4 units); returns the previous mode");
  m.def("_set_gemv_shared_x_run", &kbit::cuda::set_gemv_shared_x_run, pybind11::arg("run"),
        "Tuning aid: the adjacent units (16-row tiles of the round's chunk) each warp of a grouped x-shared GEMV "
        "launch runs back to back in a round: 0 (default) the rule (4 or 2, the longer where the tiles are a multiple "
        "of it x the CTA's slots and the runs keep the expected units' critical path), 1 (at 4-7 token slots on K of 2 "
        "or 3 256-column groups, where the x-shared aid is 1 or 2, x is then not shared), or 2 or 4 wherever the "
        "tiles are a multiple of it x the CTA's slots; returns the previous value");
  m.def("_set_gemv_resident_stages", &kbit::cuda::set_gemv_resident_stages, pybind11::arg("stages"),
        "Tuning aid: the stages of each warp's copy ring in x-resident and grouped x-shared GEMV launches (0, the "
        "default: the rule: x resident, the most, up to 4, that keep the CTAs per SM; x shared, 2 at k = 4, 5 and at "
        "k = 2, 3 the most, up to 4 and K's 256-column groups, that keep the CTAs per SM; else 2 to 4, x shared at "
        "most K's groups); returns the previous value");
  m.def("_set_gemv_grouped_schedule", &kbit::cuda::set_gemv_grouped_schedule, pybind11::arg("form"),
        "Tuning aid: the schedule of grouped GEMV launches (mma decode): 0 per CTA in shared memory (block scans), "
        "1 per warp in registers (at most 32 experts), 2 (default) per warp with static first chunks where tokens >= "
        "experts, and with more experts per CTA by row (one row per chunk, tokens <= experts), 3 per CTA by row "
        "wherever that applies; a form that does not apply falls back to the scans; returns the previous form");
  m.def("wgmma_gemm_runs", [](int64_t k, int64_t M, int64_t device) {
          return kbit::cuda::wgmma_gemm_runs(static_cast<int>(k), M, static_cast<int>(device)); },
        pybind11::arg("k"), pybind11::arg("M"), pybind11::arg("device") = 0,
        "Whether torch.ops.kbit.wgmma_gemm runs for k bits and M tokens on the device (an sm_90a build on Hopper)");
#endif
}

# Session 39 (CPU machine): a Python model of the grouped x-shared launch rule of csrc/cuda/gemm/scalar_gemv_launch.cuh
# (shared_x_choice and the step to one warp per unit, as of b0e1a8c) for the H200 (132 SMs, 228 KB of shared memory an SM,
# 227 KB a block, 1 KB reserved a block, 128 registers a thread), checked against the plans the device runs printed.
# Run: python3 cpu_model_shared_x_check.py (next to this file). Not a test: it does not follow later changes of the rule.
# Emulation of scalar_gemv_launch.cuh's grouped x-shared choice (new code), H200: 132 SMs, 228 KB/SM, 227 KB/block.
SMS, SM_SMEM, OPTIN, RES = 132, 233472, 232448, 1024
def table(k): return (1 << 2 * k) * 128 if k <= 4 else (1 << 2 * k) * 4
def stage(k, tok): return 512 * k + 128 + 512 * tok
def sums(tok, w): return 2 * w * tok * 16
def sched(E): return 8 * (32 + 2 * E + 1)
def ximg(K, tok): return (K + 255) // 256 * 512 * tok
def smem_shared(k, tok, s, E, st, K):
    b = table(k) + s * st * stage(k, 0) + 4 * sums(tok, s) + sched(E)
    return (b + 15) // 16 * 16 + 2 * ximg(K, tok)
def ctas_per_sm(threads, b):
    if b > OPTIN: return 0
    return min(65536 // (128 * threads), SM_SMEM // (b + RES), 2048 // threads, 32)
def choose(k, tok, E, N, K, units, aid_stages=0, base=8, xmode=1):
    groups = (K + 255) // 256; tiles = (N + 15) // 16
    if xmode == 0 or groups < 2 or (tok < 8 and groups < 4): return None
    want = max(1, units); cands = []
    for s in (base, 16):
        if s < 2 or tiles % s or (s != base and (base != 8 or xmode == 2)): continue
        most = min(4, groups)
        st = min(aid_stages if aid_stages > 0 else 2, groups)
        c = ctas_per_sm(32 * s, smem_shared(k, tok, s, E, st, K))
        if c == 0: continue
        if k < 4 and aid_stages == 0:
            while st < most and ctas_per_sm(32 * s, smem_shared(k, tok, s, E, st + 1, K)) == c: st += 1
        ctas = min(-(-want // s), c * SMS); rounds = -(-want // (ctas * s))
        busy = s * min(c, -(-ctas // SMS))
        cands.append(dict(s=s, st=st, per_sm=s * c, busy=busy, cost=rounds * busy))
    if not cands: return None
    pick = 1 if len(cands) == 2 and cands[1]["per_sm"] > cands[0]["per_sm"] else 0
    if k >= 4 and len(cands) == 2 and -(-want // cands[pick]["s"]) < SMS and cands[1 - pick]["cost"] < cands[pick]["cost"]: pick = 1 - pick
    return cands[pick]
def step(k, x, units, warps):
    if x is None: return warps
    slots = x["busy"] if k >= 4 else x["per_sm"]
    if (warps == 2 or (warps == 3 and k >= 4)) and 3 * units >= 2 * SMS * slots: return 1
    return warps

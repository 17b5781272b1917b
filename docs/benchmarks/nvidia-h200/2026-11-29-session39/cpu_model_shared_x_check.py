import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_model_shared_x import *
# (k, tokens, E, N, K, halving result warps) -> expected from measurements
cells = [  # name, k, E, per, N, K, warps after halving loop (from run plans)
 ("gu 24x8", 4, 24, 8, 512, 2048, 2), ("gu 32x8", 4, 32, 8, 512, 2048, 2), ("gu 36x8", 4, 36, 8, 512, 2048, 1),
 ("gu 64x8", 4, 64, 8, 512, 2048, 1), ("gu 128x8", 4, 128, 8, 512, 2048, 1), ("gu 512x8", 4, 512, 8, 512, 2048, 1),
 ("gu 96x8", 4, 96, 8, 512, 2048, 1), ("gu 160x8", 4, 160, 8, 512, 2048, 1),
 ("dn 6x8", 4, 6, 8, 2048, 512, 2), ("dn 8x8", 4, 8, 8, 2048, 512, 2), ("dn 64x8", 4, 64, 8, 2048, 512, 1),
 ("dn 8x8 k2", 2, 8, 8, 2048, 512, 2), ("dn 8x8 k3", 3, 8, 8, 2048, 512, 2), ("gu 64x8 k2", 2, 64, 8, 512, 2048, 2),
 ("gu 40x8 k2", 2, 40, 8, 512, 2048, 2), ("gu 64x8 k5", 5, 64, 8, 512, 2048, 1), ("gu 32x8 k5", 5, 32, 8, 512, 2048, 2),
 ("glm dn 8x8", 4, 8, 8, 2048, 1536, 3), ("glm gu 8x8", 4, 8, 8, 1536, 2048, 2), ("glm dn 12x8", 4, 12, 8, 2048, 1536, 3),
 ("glm gu 64x8", 4, 64, 8, 1536, 2048, 1), ("glm dn 64x4", 4, 64, 4, 2048, 1536, 1), ("gu 64x4", 4, 64, 4, 512, 2048, 1),
 ("gu 512x4", 4, 512, 4, 512, 2048, 1), ("glm dn 8x8 k2", 2, 8, 8, 2048, 1536, 3),
]
for name, k, E, per, N, K, w in cells:
    tok = 8 if per > 4 else 4
    units = E * -(-per // tok) * (N // 16)
    x = choose(k, tok, E, N, K, units)
    w2 = step(k, x, units, w)
    shared = x is not None and w2 == 1
    print(f"{name:14s} units {units:6d} -> wpu {w2}", f"x shared {x['s']}-warp CTAs, {x['st']} stages, busy {x['busy']}, per_sm {x['per_sm']}, cost {x['cost']}" if shared else "(x staged)")

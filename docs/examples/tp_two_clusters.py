"""Tensor parallelism on two 8-GPU A100 servers, NVSwitch and PCIe, from Python: dtsim's result objects in a pandas
DataFrame and a matplotlib chart (docs/python.md). Run by tests/python/test_api.py.

    ./dtsim python docs/examples/tp_two_clusters.py [OUT.png]
"""
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dtsim

# One scenario, built from keyword sections; its sweep gives 2 clusters x 4 TP sizes = 8 points.
rows = dtsim.sweep(
    cluster={"gpu": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8},
    model={"preset": "gpt-1.7b"},
    training={"global_batch": 64, "micro_batch": 2},
    sweep={"cluster.intra": ["nvswitch", "pcie"], "parallelism.tp": [1, 2, 4, 8]},
    jobs=2,
)
best = min(rows, key=lambda r: r.step_time_s)   # result objects: fields as attributes, units in their names
print(f"fastest: {best.name}, {best.step_time_s:.3f} s a step, MFU {best.mfu:.1%}, "
      f"exposed communication {best.breakdown_s.exposed_comm:.3f} s")

df = dtsim.to_frame(rows)   # the columns of results.csv
df = df.rename(columns={"point.values.cluster.intra": "intra"})
print(df[["intra", "tp", "step_time_s", "mfu", "breakdown_s.exposed_comm"]].to_string(index=False))

fig, ax = plt.subplots(figsize=(3.3, 2.4))   # one paper column
for intra, g in df.groupby("intra"):
    ax.plot(g["tp"], g["step_time_s"], marker="o", label=intra)
ax.set_xscale("log", base=2)
ax.set_xticks([1, 2, 4, 8], labels=["1", "2", "4", "8"])
ax.set_xlabel("tensor-parallel size")
ax.set_ylabel("step time (s)")
ax.legend(title="8 x A100")
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "tp_two_clusters.png", dpi=150)

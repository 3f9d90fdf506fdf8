"""A sweep from Python into a pandas DataFrame and a matplotlib chart (README.md, "Python").

    ./dtsim python docs/examples/sweep_pandas.py [OUT.png]
"""
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

import dtsim

rows = dtsim.sweep("tests/data/scenarios/sweep-lines.yaml", jobs=2)   # one dict per point, in sweep order
df = pd.json_normalize([r for r in rows if "error" not in r], sep="/")
df = df.rename(columns={"scenario/parallelism/tp": "tp", "scenario/training/micro_batch": "micro_batch",
                        "scenario/cluster/gpu/name": "gpu", "memory/fits": "fits"})
print(df[["gpu", "tp", "micro_batch", "step_time_s", "mfu", "fits"]].to_string(index=False))

fig, ax = plt.subplots()
for micro_batch, g in df[df["gpu"] == "a100-sxm4-80gb"].groupby("micro_batch"):
    ax.plot(g["tp"], g["step_time_s"], marker="o", label=f"micro-batch {micro_batch}")
ax.set_xlabel("tensor-parallel size (tp)")
ax.set_ylabel("step time (s)")
ax.legend()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "step_time.png")

#!/usr/bin/env bash
# Prints the markdown tables of docs/inference.md from the shipped scenarios (run after a cost-model
# or profile change, then paste them into the doc).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tpsim="${1:-$root/build/cli/tpsim}"
cd "$root"
py=/usr/bin/python3
echo "| model, batch | variant | TTFT ms | TPOT ms | tokens/s | exposed comm ms | speedup |"
echo "|---|---|---|---|---|---|---|"
for f in llama3-70b-tp8-generate-b1 llama3-70b-tp8-generate-b8 llama3-70b-tp8-generate-b32 \
         llama3-8b-tp8-generate-b1 llama3-8b-tp8-generate-b32; do
  "$tpsim" run "scenarios/$f.yaml" --json - | "$py" -c '
import json, sys
d = json.load(sys.stdin)
s = d["scenario"]
label = {"llama-3.1-70b": "70B", "llama-3.1-8b": "8B"}[s["model"]["name"]] + ", " + str(s["workload"]["batch"])
for i, r in enumerate(d["results"]):
    exposed = "%.1f" % (r["exposed_comm_s"] * 1e3) if r["exposed_comm_s"] > 0 else "0"
    print("| %s | %s | %.1f | %.3f | %.0f | %s | %.3fx |" % (label if i == 0 else "", r["variant"], r["ttft_s"] * 1e3,
          r["tpot_s"] * 1e3, r["tokens_per_s"], exposed, r["speedup"]))'
done
echo
echo "| model | tp | dtp1 | dtp2 | dtp4 | nocomm |"
echo "|---|---|---|---|---|---|"
for f in qwen3-0.6b-tp4-decode-delta danube3-500m-tp4-decode-delta; do
  "$tpsim" run "scenarios/$f.yaml" --json - | "$py" -c '
import json, sys
d = json.load(sys.stdin)
print("| %s | %s |" % (d["scenario"]["model"]["name"], " | ".join("%.3f" % (r["tpot_s"] * 1e3) for r in d["results"])))'
done
echo
echo "| prompt tokens | tp ms | all-reduce (exposed) ms | all-reduce share | nocomm ms |"
echo "|---|---|---|---|---|"
"$tpsim" run scenarios/llama3-70b-tp8-prefill-sweep.yaml --json - | "$py" -c '
import json, sys
rows = {}
for r in json.load(sys.stdin)["results"]:
    rows.setdefault(r["point"]["workload.seq_len"], {})[r["variant"]] = r
for k, v in rows.items():
    tp, nc = v["tp"], v["nocomm"]
    print("| {:,} | {:.1f} | {:.1f} | {:.0f}% | {:.1f} |".format(int(k), tp["time_s"] * 1e3, tp["exposed_comm_s"] * 1e3,
          100 * tp["exposed_comm_s"] / tp["time_s"], nc["time_s"] * 1e3))'

#!/usr/bin/env bash
# A/B of the pageable 4 GiB stream under environment settings that change how the host stages,
# e.g. glibc's non-temporal-store threshold (GLIBC_TUNABLES: read at start-up), warplab's own
# streaming-store copy (WARPLAB_NT_COPY) or the chunk size. Each config is NAME[:VAR=V ...],
# run in a fresh process, rounds in the same order. Usage (GPU machine):
#   PYTHONPATH=$PWD/src bash benchmarks/stream_env_ab.sh OUTDIR ROUNDS CONFIG...
# e.g. ... /tmp/ab 3 plain:WARPLAB_NT_COPY=0 nt:WARPLAB_NT_COPY=1
set -u
out=$1; rounds=$2; shift 2
configs=("$@")
for r in $(seq 1 "$rounds"); do
  for c in "${configs[@]}"; do
    name=${c%%:*}; envs=""; [[ $c == *:* ]] && envs=${c#*:}
    env $envs timeout 120 python3 -m warplab stream --device ${DEV:-cuda} --sizes ${SIZE:-4G} --source pageable \
      --runs 3 --warmup 1 --json "$out/ab-$name-$r.json" > /dev/null 2>&1 || echo "$name failed"
    python3 - "$out/ab-$name-$r.json" "$name" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for x in d["results"]:
    print(f"{sys.argv[2]:14} round {sys.argv[3]} {x['params']['op']:9} {x['e2e_gbps']:5.1f} GB/s "
          f"h2d {(x['phases'].get('h2d') or {}).get('median', 0):6.1f} ms read {(x.get('read') or {}).get('median', 0):6.1f} ms")
PY
  done
done

#!/usr/bin/env bash
# Same-run A/B of the closed loop: the server built at OLD against the server built from the work
# tree, round by round with the order flipped each round, each run on a fresh database.
#
#   bash benches/ab.sh OLD [ROUNDS] [TASKS] [ENGINES]
#   bash benches/ab.sh 039e0d1 4 10000 postgres,sqlite
#
# OLD is built in a git worktree outside the repository, ${A2A_AB_DIR:-/work/ab-old}/tree-<old>,
# with a target directory of its own beside it (cargo refuses a tree that lands inside this
# workspace, as target/ does); the bench harness and the new server are the work tree's release
# builds, in ${CARGO_TARGET_DIR:-target}. Writes
# benches/results/<date>-ab-<old>-<new>[-<A2A_AB_TAG>].json (every round's tasks/s, and per engine the ratio
# new ÷ old of each round, its median and range, and the means) and prints the summary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

old_arg="${1:?usage: bash benches/ab.sh OLD [ROUNDS] [TASKS] [ENGINES]}"
rounds="${2:-4}"
tasks="${3:-10000}"
engines="${4:-postgres,sqlite}"

old=$(git rev-parse --short "$old_arg")
new=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- src crates Cargo.toml Cargo.lock || new="$new-dirty"

work="${A2A_AB_DIR:-/work/ab-old}"
mkdir -p "$work"
work=$(cd "$work" && pwd)
target="${CARGO_TARGET_DIR:-target}"
tree="$work/tree-$old"
if [ ! -d "$tree" ]; then
    git worktree prune
    git worktree add --detach -f "$tree" "$old" >/dev/null
fi
echo "building the server at $old (in $tree)"
(cd "$tree" && CARGO_TARGET_DIR="$work/target-old" cargo build --release --quiet --bin a2a-mailbox)
old_bin="$work/target-old/release/a2a-mailbox"
echo "building the server and the harness from the work tree ($new)"
cargo build --release --quiet --bin a2a-mailbox
cp "$target/release/a2a-mailbox" "$work/a2a-mailbox-new"
new_bin="$work/a2a-mailbox-new"

# A2A_AB_TAG names a run made under other settings (say, `export-on` with OTEL_ variables set), so
# that it does not overwrite the plain run of the same two commits.
out="benches/results/$(date -u +%F)-ab-$old-$new${A2A_AB_TAG:+-$A2A_AB_TAG}.json"
runs="$work/runs-$old-$new"
rm -rf "$runs"
mkdir -p "$runs"
IFS=, read -r -a engine_list <<<"$engines"
for engine in "${engine_list[@]}"; do
    for round in $(seq 1 "$rounds"); do
        if [ $((round % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
        for which in $order; do
            if [ "$which" = old ]; then bin="$old_bin"; else bin="$new_bin"; fi
            dir="$runs/$engine-$round-$which"
            echo "== $engine round $round: $which"
            cargo bench --quiet --bench mailbox -- --engines "$engine" --phases lifecycle \
                --tasks "$tasks" --no-peer --server "$bin" --out "$dir" >"$dir.log" 2>&1 \
                || { tail -20 "$dir.log"; exit 1; }
        done
    done
done

python3 - "$runs" "$out" "$old" "$new" "$rounds" "$tasks" "$engines" <<'EOF'
import json, statistics, sys
runs, out, old, new, rounds, tasks, engines = sys.argv[1:]
rows, summary = [], {}
for engine in engines.split(","):
    ratios, tps = [], {"old": [], "new": []}
    for r in range(1, int(rounds) + 1):
        per = {}
        for which in ("old", "new"):
            s = json.load(open(f"{runs}/{engine}-{r}-{which}/summary.json"))
            v = s["engines"][engine]["lifecycle"]["tasks_per_s"]
            per[which] = v
            tps[which].append(v)
            rows.append({"engine": engine, "round": r, "binary": which,
                         "commit": old if which == "old" else new, "tasks_per_s": round(v, 1)})
        ratios.append(per["new"] / per["old"])
    summary[engine] = {
        "new_over_old_per_round": [round(x, 3) for x in ratios],
        "new_over_old_median": round(statistics.median(ratios), 3),
        "new_over_old_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "mean_tasks_per_s_old": round(statistics.mean(tps["old"]), 1),
        "mean_tasks_per_s_new": round(statistics.mean(tps["new"]), 1),
    }
doc = {
    "command": f"bash benches/ab.sh {old} {rounds} {tasks} {engines}: cargo bench --bench mailbox "
               f"-- --engines <engine> --phases lifecycle --tasks {tasks} --no-peer "
               "--server <old or new a2a-mailbox>; the order flips each round",
    "old": old, "new": new, "rounds": rows, "summary": summary,
}
json.dump(doc, open(out, "w"), indent=1)
print(json.dumps(summary, indent=1))
print("written:", out)
EOF

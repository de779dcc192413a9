#!/usr/bin/env bash
# pu's main job on a built-in default, no AI account needed: two terminal agents
# each do a small scripted task in their own git worktree; we watch their status,
# read their diffs, merge one, clean up, and say what happened.
# Everything lives in temp dirs (its own PU_HOME too) and the daemon is stopped at the end.
set -euo pipefail
repo_dir="$(cd "$(dirname "$0")/.." && pwd)"
pu() { node "$repo_dir/packages/pu-cli/bin/pu" "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [ ! -f "$repo_dir/packages/pu-cli/dist/cli.js" ]; then
  bash "$repo_dir/scripts/setup.sh"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/pu-demo.XXXXXX")"
export PU_HOME="$work/home"
project="$work/project"
cleanup() {
  pu daemon stop >/dev/null 2>&1 || true
  if [ "${PU_DEMO_KEEP:-}" = "1" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

say "a fresh git repository at $project"
mkdir -p "$project" && cd "$project"
git init -q -b main
git config user.email demo@pu.invalid && git config user.name "pu demo" && git config commit.gpgsign false
printf '# demo\n' > README.md && git add README.md && git commit -qm "initial commit"

say "pu init (the daemon starts on demand)"
pu init

say "spawn two terminal agents, each in its own worktree, each with a small task"
pu spawn --agent terminal --name greeting \
  "printf 'hello from agent one\n' > greeting.txt && git add greeting.txt && git commit -qm 'add greeting' && echo done-one"
pu spawn --agent terminal --name farewell \
  "printf 'goodbye from agent two\n' > farewell.txt && git add farewell.txt && git commit -qm 'add farewell' && echo done-two"

say "wait until both agents are back at their prompt (status: waiting)"
for _ in $(seq 1 60); do
  # Both tasks print done-…; then the shell shows its prompt and the agent is waiting.
  waiting=$(pu status --json | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const r = JSON.parse(s);
      const agents = Object.values(r.worktrees).flatMap((w) => Object.values(w.agents));
      console.log(agents.filter((a) => a.status === "waiting").length);
    });')
  [ "$waiting" = "2" ] && break
  sleep 0.5
done
pu status

wt_of() { pu status --json | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    const w = Object.values(JSON.parse(s).worktrees).find((w) => w.name === process.argv[1]);
    console.log(w.id);
  });' "$1"; }
one=$(wt_of greeting)
two=$(wt_of farewell)
agent_one=$(pu status --json | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    console.log(Object.keys(JSON.parse(s).worktrees[process.argv[1]].agents)[0]);
  });' "$one")

say "what agent one's terminal shows (pu logs $agent_one --tail 400)"
pu logs "$agent_one" --tail 400; echo

say "their diffs against main"
pu diff --stat

say "merge the first worktree ($one) into main"
pu merge "$one"
git log --oneline -n 3

say "clean up: merged work goes, unmerged work is kept (pu clean --all)"
pu clean --all
say "throw away the unmerged second worktree on purpose (pu clean --worktree $two --force)"
pu clean --worktree "$two" --force

say "what happened"
echo "main now has: $(git ls-files | tr '\n' ' ')"
echo "greeting.txt on main: $(cat greeting.txt)"
if [ -e farewell.txt ]; then echo "unexpected: farewell.txt on main"; exit 1; fi
echo "farewell.txt was not merged; its worktree $two was kept by clean --all and discarded with --force."
echo "worktrees left: $(git worktree list | wc -l) (just the main checkout)"
say "demo finished"

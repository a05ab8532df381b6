#!/usr/bin/env bash
# Smoke test of the README's start command: runs `npm start` in the background (the gateway on its
# simulated deployments), waits until GET /health answers 200, sends one Chat Completions call and
# one Messages call with curl, then stops it. Exits non-zero, with the gateway's output, on failure.
#
#   bash sample/smoke.sh            # on a free port
#   SMOKE_PORT=3000 bash sample/smoke.sh
set -uo pipefail
cd "$(dirname "$0")/.."

port="${SMOKE_PORT:-$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')}"
base="http://127.0.0.1:${port}"
log="$(mktemp -t switchboard-smoke.XXXXXX)"

# The smoke test is about the built-in simulated deployments: ignore real ones in the environment.
unset SWITCHBOARD_CONFIG AZURE_OPENAI_ENDPOINT AZURE_OPENAI_API_KEY OPENAI_API_KEY

# In a session of its own, so that stopping it stops npm, its shell and node together.
PORT="$port" HOST=127.0.0.1 setsid npm start >"$log" 2>&1 </dev/null &
pid=$!

stop() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL -- "-$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  rm -f "$log"
}
trap stop EXIT

fail() {
  echo "smoke: FAILED: $*" >&2
  echo "----- npm start output -----" >&2
  cat "$log" >&2
  exit 1
}

# `npm start` builds the package first: give it up to three minutes.
status=000
for _ in $(seq 1 180); do
  status="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$base/health")"
  [ "$status" = 200 ] && break
  kill -0 "$pid" 2>/dev/null || fail "npm start exited before GET /health answered 200"
  sleep 1
done
[ "$status" = 200 ] || fail "GET /health answered $status, not 200, within 180 s"
echo "smoke: GET $base/health -> 200"

chat="$(curl -sS --fail-with-body --max-time 30 "$base/v1/chat/completions" \
  -H 'content-type: application/json' \
  -H 'x-session-id: smoke' \
  -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello from the smoke test"}]}')" ||
  fail "POST /v1/chat/completions: $chat"
case "$chat" in
  *'"object":"chat.completion"'*'Hello from the smoke test'*) ;;
  *) fail "POST /v1/chat/completions answered: $chat" ;;
esac
echo "smoke: POST $base/v1/chat/completions -> chat.completion"

message="$(curl -sS --fail-with-body --max-time 30 "$base/v1/messages" \
  -H 'content-type: application/json' \
  -H 'anthropic-version: 2023-06-01' \
  -d '{"model":"claude-sonnet-5","max_tokens":256,"messages":[{"role":"user","content":"Hello from the smoke test"}]}')" ||
  fail "POST /v1/messages: $message"
case "$message" in
  *'"type":"message"'*'Hello from the smoke test'*) ;;
  *) fail "POST /v1/messages answered: $message" ;;
esac
echo "smoke: POST $base/v1/messages -> message"
echo "smoke: passed"

#!/usr/bin/env bash
# tpsim-real's command line, as a user meets it: bad values are one line on stderr with exit 2, before
# any GPU is touched; help lists every subcommand; `shapes` needs no GPU.
# Usage: cli_errors_test.sh TPSIM_REAL SCENARIO
set -uo pipefail
real="$1" scenario="$2"
fail() { echo "FAILED: $*" >&2; exit 1; }
expect_error() {  # expected message, then the arguments
  local message="$1"
  shift
  local err status
  err="$("$real" "$@" 2>&1 >/dev/null)"
  status=$?
  [ "$status" -eq 2 ] || fail "tpsim-real $* exited $status, expected 2"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "tpsim-real $* printed more than one line: $err"
  grep -qF -- "$message" <<<"$err" || fail "tpsim-real $*: '$err' lacks '$message'"
}
expect_error "unknown collective 'allsum'; valid: allreduce, allgather" collective --op allsum
expect_error "--min-bytes 2048 is above --max-bytes 1024" collective --op allreduce -b 2KiB -e 1KiB
expect_error "'huge' is not a size" memcpy -e huge
expect_error "expected MxNxK" gemm --shape 12x3
expect_error "--transport pigeon: valid: nccl, copy_engine" async-tp --pattern allgather_gemm --chunks 8 --transport pigeon
expect_error "--id-file needs --rank R and --nranks N" dtp --delta 2 --id-file /tmp/x
expect_error "--nodes: Value 0 not in range 1 to" collective --op allreduce --nodes 0
expect_error "The following argument was not expected: --bogus" memcpy --bogus
"$real" --help | grep -q "async-tp" || fail "--help does not list async-tp"
"$real" shapes --scenario "$scenario" | grep -qE '^[0-9]+x[0-9]+x[0-9]+' || fail "shapes printed no shape"
echo "tpsim-real command-line checks ok"

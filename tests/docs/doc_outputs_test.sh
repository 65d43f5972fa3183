#!/usr/bin/env bash
# tools/doc_outputs.py on a scratch markdown file: check fails with a diff where a quoted output differs or a
# command exits other than declared, update rewrites the blocks, and check then passes.
# Usage: doc_outputs_test.sh TPSIM SCRATCH_DIR
set -euo pipefail
tool="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tools/doc_outputs.py"
tpsim="$1" dir="$2"
mkdir -p "$dir"
doc="$dir/doc.md"
fail() { echo "FAILED: $*"; exit 1; }

cat > "$doc" <<'MD'
```text
$ echo hello
goodbye
```

<!-- output of: printf '| a |\n|---|\n| 1 |\n' -->
| a |
|---|
| 2 |

<!-- end of output -->

```text
$ echo failing; exit 3   # exit 3
failing
```

The variant gains **1.40x**<!-- value of: echo '{"results": [{"variant": "a", "speedup": 1.5}]}' => r("a", "speedup") -->
and takes 1,234.5 ms<!-- value of: echo 'step 2345.67 s' => num(r"step ([\d.]+) s") * 1e3 -->.
MD
if python3 "$tool" check --tpsim "$tpsim" "$doc" > "$dir/out" 2>&1; then fail "check passed on stale blocks"; fi
grep -q -- "-goodbye" "$dir/out" && grep -q -- "+hello" "$dir/out" || fail "no diff of the text block: $(cat "$dir/out")"
grep -q -- "-| 2 |" "$dir/out" && grep -q -- "+| 1 |" "$dir/out" || fail "no diff of the table: $(cat "$dir/out")"
grep -q "4 failing" "$dir/out" || fail "the block exiting 3 as declared was reported: $(cat "$dir/out")"
grep -q "doc.md:18: 1.40 should read 1.50" "$dir/out" || fail "no stale number reported: $(cat "$dir/out")"
grep -q "doc.md:19: 1,234.5 should read 2,345,670.0" "$dir/out" || fail "no stale number reported: $(cat "$dir/out")"

python3 "$tool" update --tpsim "$tpsim" "$doc" > "$dir/out" 2>&1 || fail "update failed: $(cat "$dir/out")"
python3 "$tool" check --tpsim "$tpsim" "$doc" > "$dir/out" 2>&1 || fail "check failed after update: $(cat "$dir/out")"
grep -q "^hello$" "$doc" && grep -q "^| 1 |$" "$doc" && grep -q "^<!-- end of output -->$" "$doc" ||
  fail "update did not rewrite the blocks: $(cat "$doc")"
grep -q "gains \*\*1.50x\*\*<!-- value of" "$doc" && grep -q "takes 2,345,670.0 ms<!-- value of" "$doc" ||
  fail "update did not rewrite the numbers: $(cat "$doc")"

# A number written as tpsim writes its results needs an annotation: a value, or why it is not one.
printf 'A bare 2.345x, a published 1.29x<!-- published -->, a time of 12.500 ms<!-- history -->.\n' >> "$doc"
if python3 "$tool" check --tpsim "$tpsim" "$doc" > "$dir/out" 2>&1; then fail "check passed on an unannotated result"; fi
grep -q "doc.md:20: 2.345x reads like a tpsim result but has no annotation" "$dir/out" && grep -q "1 failing" "$dir/out" ||
  fail "the unannotated result was not the one failure: $(cat "$dir/out")"
sed -i '$d' "$doc"

sed -i 's/# exit 3/# exit 0/' "$doc"
if python3 "$tool" check --tpsim "$tpsim" "$doc" > "$dir/out" 2>&1; then fail "check passed on a wrong exit status"; fi
grep -q "exited 3, not 0" "$dir/out" || fail "the wrong exit status was not named: $(cat "$dir/out")"
echo "doc_outputs check and update behave"

#!/usr/bin/env bash
# The dxp command line on a real text file, with its guarantee report.
#
#   bash examples/cli_report.sh [EPSILON]        (default 10; run from anywhere)
#
# Writes 12 movie-review sentences of the Pang & Lee corpus (dxp_plugins.datasets) to
# examples/output/reviews.txt, privatizes them one document per line with Madlib over the
# 100,000 most frequent GloVe words, and prints both texts and the JSON guarantee report.
# Uses the README environment (.venv) when it exists, else `python3` and `dxp` from PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
EPSILON=${1:-10}
if [ -x .venv/bin/dxp ]; then BIN=.venv/bin/; else BIN=""; fi
PY=${BIN:+${BIN}python}; PY=${PY:-python3}
OUT=examples/output
mkdir -p "$OUT"

"$PY" - "$OUT/reviews.txt" <<'PYTHON'
import sys
from dxp_plugins.datasets import load_pang_lee
sentences, _ = load_pang_lee("sentences")
with open(sys.argv[1], "w", encoding="utf-8") as stream:
    stream.writelines(sentence.strip() + "\n" for sentence in sentences[:12])
PYTHON

start=$(date +%s.%N)
"${BIN}dxp" privatize "$OUT/reviews.txt" --epsilon "$EPSILON" --vocab-size 100000 \
  --output "$OUT/reviews.private.txt" --report "$OUT/report.json"
end=$(date +%s.%N)

paste -d '\n' <(sed 's/^/  raw:     /' "$OUT/reviews.txt") \
              <(sed 's/^/  private: /' "$OUT/reviews.private.txt") <(sed 's/.*//' "$OUT/reviews.txt")
echo "guarantee report ($OUT/report.json):"
cat "$OUT/report.json"
echo "dxp privatize took $(echo "$end - $start" | bc) s (start-up, GloVe load, 12 lines)"

#!/usr/bin/env bash
# Runs every built-in scenario (quick subset) and takes a full-page
# screenshot of each report in headless Chromium at 1400 px, for a person
# to look at: out/screenshots/<scenario>.png.
#   bash scripts/report-screenshots.sh [scenario...]
set -euo pipefail
cd "$(dirname "$0")/.."
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "no Chromium: apt-get install chromium" >&2; exit 1
fi
go build -o out/sdrnet ./cmd/sdrnet
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  mapfile -t names < <(out/sdrnet sim --list | awk '{print $1}')
fi
mkdir -p out/screenshots
for n in "${names[@]}"; do
  out/sdrnet sim "$n" --out "out/$n" >/dev/null
  # Tall enough for the longest report; the page's own height is what
  # a person scrolls through.
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,16000 \
    --screenshot="out/screenshots/$n.png" "file://$PWD/out/$n/report.html" 2>/dev/null
  echo "out/screenshots/$n.png"
done

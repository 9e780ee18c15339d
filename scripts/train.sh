#!/usr/bin/env bash
# The README's main job: set up, then train a model end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 examples/train_lenet.py "$@"

#!/usr/bin/env bash
# The one lint entry point; scripts/test.sh runs it before the tests, so CI does too.
#   1. ruff on the Python (rules in pyproject.toml [tool.ruff]);
#   2. clang-format (.clang-format) on the C++ lines changed by recent commits and the
#      working tree: only changed lines, so code is formatted as it is touched and work
#      going on elsewhere in the tree is not held to it. "Recent" is the last LINT_DEPTH
#      commits (default 20), or every commit of a branch since it left main if that is
#      more: a misformatted commit stays visible after the commits that follow it;
#   3. no tracked source file over 1,000 lines.
# Runs every check, prints what fails, and exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
MAX_LINES=1000
failed=()

echo "[lint] ruff"
"$PY" -m ruff check --quiet --output-format concise python tests bench scripts paddle_core/ops/generator || failed+=(ruff)

echo "[lint] clang-format on changed C++ lines"
cxx=('*.cc' '*.h' '*.cu' '*.cuh')
if ! command -v clang-format >/dev/null || ! command -v clang-format-diff >/dev/null; then
  echo "clang-format / clang-format-diff not found (scripts/install_deps.sh installs them)"
  failed+=(clang-format)
elif git rev-parse -q --verify HEAD >/dev/null; then
  # HEAD~LINT_DEPTH, or the merge base with main where that is older. A repository with
  # fewer commits compares with the empty tree; a shallow clone with its oldest commit.
  depth=${LINT_DEPTH:-20}
  if ! base=$(git rev-parse -q --verify "HEAD~$depth"); then
    if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
      base=$(git rev-list HEAD | tail -1)
      echo "(shallow clone: checking the changes since $base only)"
    else
      base=$(git hash-object -t tree /dev/null)
    fi
  fi
  if [ "$(git rev-parse --abbrev-ref HEAD)" != main ] && mb=$(git merge-base HEAD main 2>/dev/null) &&
     git merge-base --is-ancestor "$mb" "$base" 2>/dev/null; then
    base=$mb
  fi
  out=$(git diff -U0 --no-color --no-ext-diff "$base" -- "${cxx[@]}" | clang-format-diff -p1)
  for f in $(git ls-files --others --exclude-standard -- "${cxx[@]}"); do  # new, not yet added
    out+=$(clang-format --style=file "$f" | diff -u --label "a/$f" --label "b/$f" "$f" -)
  done
  if [ -n "$out" ]; then
    printf '%s\n' "$out"
    echo "C++ lines above differ from .clang-format: apply the diff, or run"
    echo "  git diff -U0 --no-color $base -- '*.cc' '*.h' | clang-format-diff -p1 -i"
    failed+=(clang-format)
  fi
fi

echo "[lint] no source file over $MAX_LINES lines"
long=$(git ls-files -z -- '*.cc' '*.h' '*.py' '*.yaml' '*.cmake' '*CMakeLists.txt' |
       while IFS= read -r -d '' f; do
         [ -f "$f" ] && n=$(wc -l < "$f") && [ "$n" -gt "$MAX_LINES" ] && echo "  $f: $n lines"
       done)
if [ -n "$long" ]; then
  printf 'split these by purpose (the limit is %s lines):\n%s\n' "$MAX_LINES" "$long"
  failed+=(file-size)
fi

if ((${#failed[@]})); then
  echo "[lint] failed: ${failed[*]}" >&2
  exit 1
fi
echo "[lint] ok"

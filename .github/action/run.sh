#!/usr/bin/env bash
# The steps of the verdict GitHub Action (action.yml): get a verdict, check each claims file
# (annotations, step summary, JUnit XML), verify each report set. The inputs arrive as
# VERDICT_* variables, the runner's facts as GITHUB_* and RUNNER_* ones. Every file is
# checked even after one fails; the exit code is the worst: 2 (an error: bad input, a missing
# or changed trace) over 1 (--strict failed, or a report set drifted) over 0.
set -uo pipefail

action_dir=${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/../.." && pwd)}
want=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$action_dir/Cargo.toml" | head -n 1)

case "${VERDICT_VERSION:-source}" in
path)
    if ! command -v verdict >/dev/null; then
        echo "::error title=verdict::no verdict on PATH (version: path); install it first, or use version: source"
        exit 2
    fi
    ;;
source)
    # `verdict 0.1.0`, or `verdict 0.1.0 (build <commit>)` from a git checkout.
    case "$(verdict --version 2>/dev/null)" in
        "verdict $want" | "verdict $want (build "*) have=yes ;;
        *) have=no ;;
    esac
    if [ "$have" = yes ]; then
        echo "verdict $want: $(command -v verdict)"
    else
        root="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/verdict-$want"
        echo "installing verdict $want from $action_dir into $root"
        cargo install --locked --quiet --path "$action_dir" --root "$root" || exit 2
        export PATH="$root/bin:$PATH"
    fi
    ;;
*)
    echo "::error title=verdict::version must be source or path, not '${VERDICT_VERSION}'"
    exit 2
    ;;
esac

status=0
worst() {
    if [ "$1" -gt "$status" ]; then status=$1; fi
}

strict=()
case "${VERDICT_STRICT:-true}" in
true) strict=(--strict) ;;
false) ;;
*)
    echo "::error title=verdict::strict must be true or false, not '${VERDICT_STRICT}'"
    exit 2
    ;;
esac
lang=${VERDICT_LANG:-en}
junit=${VERDICT_JUNIT:-}
if [ -n "$junit" ]; then
    mkdir -p "$junit" || exit 2
fi

# Word splitting and globbing of the inputs are wanted here: spaces and line breaks separate
# files, and a glob names several.
# shellcheck disable=SC2086
for file in ${VERDICT_CLAIMS:-}; do
    echo "::group::verdict check $file"
    verdict check "$file" --format github --lang "$lang" "${strict[@]}"
    rc=$?
    echo "::endgroup::"
    worst "$rc"
    if [ "$rc" -eq 2 ]; then
        echo "::error file=$file,title=verdict check::$file could not be audited (exit 2): see the log"
    fi
    if [ -n "$junit" ]; then
        name=$(basename "$file")
        verdict check "$file" --format junit --lang "$lang" >"$junit/${name%.*}.xml"
        worst $?
    fi
done

# shellcheck disable=SC2086
for manifest in ${VERDICT_MANIFESTS:-}; do
    verdict verify "$manifest"
    rc=$?
    worst "$rc"
    case $rc in
    0) ;;
    1) echo "::error file=$manifest,title=verdict verify::the report set drifted from its traces: see the log" ;;
    *) echo "::error file=$manifest,title=verdict verify::the report set could not be verified (exit $rc): see the log" ;;
    esac
done

if [ -n "$junit" ] && [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "junit=$junit" >>"$GITHUB_OUTPUT"
fi
exit "$status"

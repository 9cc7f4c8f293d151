#!/bin/sh
# One step of `git bisect run`: optionally build, then test, and map the result to the exit
# codes bisect understands (0 good, 1 bad, 125 skip). Prints one JSON line on stdout; the
# build and test output goes to stderr.
#
# Usage: bisect-step.sh TEST_COMMAND [BUILD_COMMAND]
#   git bisect run sh scripts/bisect-step.sh 'python -m pytest tests/test_parser.py -x -q' 'make build'
set -eu

if [ "$#" -lt 1 ] || [ "$#" -gt 2 ] || [ -z "$1" ]; then
    echo "usage: bisect-step.sh TEST_COMMAND [BUILD_COMMAND]" >&2
    printf '{"verdict": "abort", "exit_code": 255, "build_status": null, "test_status": null}\n'
    exit 255
fi

test_cmd=$1
build_cmd=${2:-}
build_status=null

if [ -n "$build_cmd" ]; then
    set +e
    sh -c "$build_cmd" 1>&2
    build_status=$?
    set -e
    if [ "$build_status" -ne 0 ]; then
        # A commit that does not build cannot be judged: skip it rather than call it bad.
        printf '{"verdict": "skip", "exit_code": 125, "build_status": %s, "test_status": null}\n' \
            "$build_status"
        exit 125
    fi
fi

set +e
sh -c "$test_cmd" 1>&2
test_status=$?
set -e

if [ "$test_status" -eq 0 ]; then
    verdict=good
    code=0
elif [ "$test_status" -eq 125 ]; then
    verdict=skip
    code=125
else
    # 1-127 is bad. 128 and above (killed by a signal, e.g. 139 for a segfault) would abort
    # the whole bisect if passed through, so report it as bad too.
    verdict=bad
    code=1
fi

printf '{"verdict": "%s", "exit_code": %s, "build_status": %s, "test_status": %s}\n' \
    "$verdict" "$code" "$build_status" "$test_status"
exit "$code"

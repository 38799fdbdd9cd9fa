#!/bin/sh
# The compiler of the source-coverage fuzzer build (build-qemu.sh
# --fuzz-cov), given to configure as "--cc=scripts/lib/cc-cov.sh clang":
#
#   scripts/lib/cc-cov.sh COMPILER ARGS...
#
# Runs "ccache COMPILER ARGS" and adds clang's source-based coverage
# (-fprofile-instr-generate -fcoverage-mapping) to the compilation of the
# device's files (hw/chpp/*.c) only: every other object is then the same as
# the --fuzz build's (ccache hits), and llvm-cov reports hw/chpp alone.
# Links (no -c) get -fprofile-instr-generate, for the profile runtime.
cc=$1
shift
compile=0 chpp=0
for a in "$@"; do
    case "$a" in
        -c) compile=1 ;;
        */hw/chpp/*.c) chpp=1 ;;
    esac
done
if [ "$chpp" = 1 ]; then
    set -- "$@" -fprofile-instr-generate -fcoverage-mapping
elif [ "$compile" = 0 ]; then
    set -- "$@" -fprofile-instr-generate
fi
exec ccache "$cc" "$@"

#!/usr/bin/env bash
# Formatting and static checks, C and Python, as one command.
set -euo pipefail
cd "$(dirname "$0")/.."
c_sources=$(git ls-files 'csrc/*.c' 'csrc/*.h' 'cuda/*.c' 'cuda/*.h' 'cuda/*.cu' 'cuda/*.cpp' 'python/ext/*.c' 'python/ext/*.h')
echo "== clang-format"
clang-format --dry-run -Werror $c_sources
echo "== cppcheck"
cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,performance,portability \
  --inline-suppr --suppress=missingIncludeSystem -D__GNUC__ \
  -I csrc/runtime -I csrc/audio $(git ls-files 'csrc/*.c' 'cuda/*.c')
echo "== ruff"
ruff check python tests bench
ruff format --check python tests bench
echo "lint: clean"

#!/usr/bin/env bash
# Runs inside the bullseye builder root: /src holds the sources, the wheel
# goes to /out. Called by build_wheel.sh; $1 is the platform tag.
set -euo pipefail
plat=$1
export PATH=/opt/venv/bin:$PATH
# FFmpeg 8's configure puts -latomic in its .pc files wherever libatomic
# links, but on x86-64 its atomics are lock-free instructions (its archives
# leave no __atomic_* symbol undefined): linked as it is, the extension would
# name libatomic.so.1 and auditwheel would vendor it. Its .pc files without it:
mkdir -p /tmp/ffmpeg-pc
for pc in /opt/ffmpeg/lib/pkgconfig/*.pc; do sed 's/ -latomic//' "$pc" >"/tmp/ffmpeg-pc/${pc##*/}"; done
export PKG_CONFIG_PATH=/tmp/ffmpeg-pc
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
rm -rf /out && mkdir -p /out/raw
cuda_args=()
if [[ ${SAYWHO_WHEEL_CUDA:-ON} == ON ]]; then
  # CUDA 12.4's runtime, linked as a shared library that auditwheel vendors
  # (its PyPI wheel has no static archive); machine code for every GPU the
  # 12.4 compiler knows from the P100 on, and PTX that Blackwell (sm_100,
  # sm_120) drivers compile at load time (wheels/README.md): the "wheel" line
  # of cuda/gpu_architectures.txt
  wheel_archs=$(awk '$1 == "wheel" {print $2}' /src/cuda/gpu_architectures.txt)
  cuda_args=(-C cmake.define.CMAKE_CUDA_COMPILER=/opt/cuda/bin/nvcc
    -C cmake.define.CMAKE_CUDA_FLAGS=-cudart=shared
    -C cmake.define.SAYWHO_CUDA_RUNTIME=Shared
    -C "cmake.define.SAYWHO_CUDA_ARCHITECTURES=${SAYWHO_WHEEL_CUDA_ARCHS:-$wheel_archs}")
fi
cd /src
# OpenBLAS as Debian's static archive: only the sgemm/sgemv objects are
# linked in, nothing to vendor, and no libgfortran.
python -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w /out/raw \
  -C build-dir=/build/py \
  -C cmake.define.SAYWHO_CUDA="${SAYWHO_WHEEL_CUDA:-ON}" \
  -C cmake.define.OPENBLAS_LIB=/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.a \
  "${cuda_args[@]}" ${SAYWHO_WHEEL_CMAKE_ARGS:-} .
# the CUDA runtime to vendor is found where the build linked it
LD_LIBRARY_PATH=/opt/cuda/lib64 auditwheel repair -w /out --plat "$plat" /out/raw/*.whl
rm -rf /out/raw
